/**
 * @module What one open queue store reports to the observed gauges: jobs
 * by queue and state (the stats records), the age of each queue's oldest
 * pending job, and the WAL objects written since the last checkpoint. Read
 * from the in-memory state when a metric reader collects; a job record the
 * engine paged out of memory is loaded first (the collection waits for it),
 * so the readings never skip a store because a record was cold.
 */
import { type GaugeReadings, registerGaugeSource } from "../telemetry/metrics.js";
import * as K from "./keys.js";
import type { QueueCore } from "./queue-core.js";
import { decodeStats, JOB_STATES } from "./record.js";
import { oldestPendingNow } from "./oldest-pending.js";
import { withCarriedDone } from "./queue-stats.js";

/** Registers `core` as a gauge source until it closes. */
export function registerQueueGauges(core: QueueCore): void {
  const off = registerGaugeSource(() => gaugeReadings(core));
  core.closedListeners.add(() => off());
}

function gaugeReadings(core: QueueCore): GaugeReadings | undefined | Promise<GaugeReadings | undefined> {
  if (core.isClosed) return undefined;
  const cold: Promise<void>[] = [];
  const first = readingsNow(core, cold);
  return cold.length === 0 ? first : readingsWarmed(core, cold);
}

/** Waits for the records the first pass found cold, then reads again (a record still cold then is left out). */
async function readingsWarmed(core: QueueCore, loads: Promise<void>[]): Promise<GaugeReadings | undefined> {
  await Promise.all(loads);
  if (core.isClosed) return undefined;
  const stillCold: Promise<void>[] = [];
  const readings = readingsNow(core, stillCold);
  // Not awaited: a failed load of a record a later collection reads again must not be an unhandled rejection.
  for (const p of stillCold) p.catch(() => undefined);
  return readings;
}

/** The readings from what is in memory now; the loads of cold records it skipped go to `cold`. */
function readingsNow(core: QueueCore, cold: Promise<void>[]): GaugeReadings {
  const depth: { queue: string; state: string; jobs: number }[] = [];
  const oldestPending: { queue: string; ageSeconds: number }[] = [];
  const now = core.clock.now();
  for (const [key, bytes] of core.engine.scan({ prefix: K.STATS })) {
    const queue = key.slice(K.STATS.length);
    const stats = withCarriedDone(core.engine, queue, decodeStats(key, bytes));
    for (const state of JOB_STATES) depth.push({ queue, state, jobs: stats[state] });
    if (stats.pending === 0) continue;
    const enqueuedAt = oldestPendingNow(core.engine, queue, cold).at;
    if (enqueuedAt !== undefined) oldestPending.push({ queue, ageSeconds: Math.max(0, now - enqueuedAt) / 1000 });
  }
  return { store: core.name, depth, oldestPending, walObjectsSinceCheckpoint: core.engine.stats.walObjectsSinceCheckpoint };
}
