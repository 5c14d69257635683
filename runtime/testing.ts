/**
 * @module taquba/testing: tools for testing code built on taquba.
 *
 * A clock that tests move by hand, and store wrappers that make any store
 * slow, faulty or counted. `MockClock`, `withFaults`, `withLatency` and
 * `withCounting` are also exported from the package root, where the API
 * contract names them.
 */
export { MockClock } from "./clock.js";
export { withFaults, InjectedFaultError } from "./store/with-faults.js";
export type { FaultOptions, FaultyStore, StoreOperation } from "./store/with-faults.js";
export { withLatency } from "./store/with-latency.js";
export type { LatencyOptions } from "./store/with-latency.js";
export { withCounting } from "./store/with-counting.js";
export type { CountingStore, StoreCounts } from "./store/with-counting.js";
export { detachedLease } from "./queue/claimed-job.js";
