/**
 * @module A wrapper that makes chosen store operations fail at random, with a
 * seed so a failing test replays exactly.
 *
 * A put can fail before it reaches the inner store or after its write has
 * landed; the second case is what a timed-out S3 request looks like to the
 * caller, and every retry path must survive it.
 */
import { TaqubaError, ValidationError } from "../errors.js";
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "./object-store.js";
import { seededRandom } from "./prng.js";
import { describeValue, optionFields, quoteValue, readExactOptions, readOptionArray } from "../option-values.js";
import { checkStore } from "./store-check.js";
import { passPutMarks } from "./pass-put-marks.js";

/** An operation of `ObjectStore`, as named by `withFaults`'s `ops` option. */
export type StoreOperation = "get" | "put" | "delete" | "list";

const ALL_OPERATIONS: readonly StoreOperation[] = ["get", "put", "delete", "list"];

/** A failure that `withFaults` made up on purpose. Retryable, like a network error. */
export class InjectedFaultError extends TaqubaError {
  constructor(
    readonly operation: StoreOperation,
    readonly key: string,
    /** True when the put's write reached the inner store before the error. */
    readonly afterWrite: boolean,
  ) {
    super(
      "INJECTED_FAULT",
      `injected fault: ${operation} of "${key}" failed${afterWrite ? " after the write landed" : ""}; this error comes from withFaults, lower failureRate to 0 to stop it`,
      { retryable: true },
    );
  }
}

/** Options of `withFaults`. */
export interface FaultOptions {
  /** Probability in [0, 1] that a covered operation fails. */
  failureRate: number;
  /** Seed of the generator deciding which calls fail; the same seed and call sequence fail the same calls. Default 1. */
  seed?: number;
  /** Operations that may fail. Default: all four. */
  ops?: readonly StoreOperation[];
  /** Share in [0, 1] of injected put failures that happen after the inner put landed. Default 0.5. */
  failAfterWriteRate?: number;
}

/** A store whose calls fail at random; see `withFaults`. */
export interface FaultyStore extends ObjectStore {
  /** Probability in [0, 1] that a covered operation fails; settable at any time, 0 turns faults off. */
  failureRate: number;
  /** Number of faults injected so far. */
  readonly injected: number;
}

function checkRate(name: string, value: number): number {
  if (typeof value !== "number" || !(value >= 0 && value <= 1)) {
    throw new ValidationError(`withFaults: ${name} must be a number between 0 and 1, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * Wraps `store` so that each call of a covered operation fails with
 * probability `failureRate`, throwing `InjectedFaultError`. A random draw is
 * taken for every covered call, even while the rate is 0, so the pattern of
 * failures for a seed depends only on the sequence of calls. A listing fails
 * when its iteration starts, before yielding anything.
 *
 * @example
 * const store = withFaults(new MemoryStore(), { failureRate: 0.1, seed: 42, ops: ["put"] });
 * // ...run the workload, then check its invariants; store.injected counts the faults.
 */
export function withFaults(store: ObjectStore, given: FaultOptions): FaultyStore {
  checkStore("withFaults", store);
  const opts = readExactOptions(
    given,
    optionFields<FaultOptions>({ failureRate: true, seed: true, ops: true, failAfterWriteRate: true }),
    "FaultOptions",
  ) as FaultOptions;
  if (opts.ops !== undefined) opts.ops = readOptionArray("FaultOptions.ops", opts.ops, "an array of operation names", 16) as StoreOperation[];
  let failureRate = checkRate("failureRate", opts.failureRate);
  const failAfterWriteRate = checkRate("failAfterWriteRate", opts.failAfterWriteRate ?? 0.5);
  const covered = new Set<StoreOperation>(opts.ops ?? ALL_OPERATIONS);
  for (const op of covered) {
    if (!ALL_OPERATIONS.includes(op)) {
      throw new ValidationError(`withFaults: unknown operation ${quoteValue(op)} in ops; use ${ALL_OPERATIONS.join(", ")}`);
    }
  }
  const random = seededRandom(opts.seed ?? 1);
  let injected = 0;

  const shouldFail = (op: StoreOperation): boolean => {
    if (!covered.has(op)) return false;
    const fail = random() < failureRate;
    if (fail) injected++;
    return fail;
  };

  const wrapped: FaultyStore = {
    get failureRate() {
      return failureRate;
    },
    set failureRate(value: number) {
      failureRate = checkRate("failureRate", value);
    },
    get injected() {
      return injected;
    },

    async get(key: string): Promise<StoredObject | null> {
      if (shouldFail("get")) throw new InjectedFaultError("get", key, false);
      return store.get(key);
    },

    ...(store.getBorrowed === undefined
      ? {}
      : {
          async getBorrowed(key: string): Promise<StoredObject | null> {
            if (shouldFail("get")) throw new InjectedFaultError("get", key, false);
            return store.getBorrowed!(key);
          },
        }),

    ...(store.getRange === undefined
      ? {}
      : {
          async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
            if (shouldFail("get")) throw new InjectedFaultError("get", key, false);
            return store.getRange!(key, offset, length);
          },
        }),

    ...(store.getRangeInto === undefined
      ? {}
      : {
          async getRangeInto(key: string, offset: number, into: Uint8Array): Promise<number | null> {
            if (shouldFail("get")) {
              // A read that fails part way may leave some of the buffer written: callers must not trust it.
              into.fill(0xee, 0, Math.ceil(into.byteLength / 2));
              throw new InjectedFaultError("get", key, false);
            }
            return store.getRangeInto!(key, offset, into);
          },
        }),

    async put(key: string, body: Uint8Array, putOpts?: PutOptions): Promise<{ etag: string }> {
      if (!shouldFail("put")) return store.put(key, body, putOpts);
      // Drawn even when the rate is 0 or 1 so the sequence stays aligned.
      const afterWrite = random() < failAfterWriteRate;
      if (afterWrite) await store.put(key, body, putOpts);
      throw new InjectedFaultError("put", key, afterWrite);
    },

    async delete(key: string): Promise<void> {
      if (shouldFail("delete")) throw new InjectedFaultError("delete", key, false);
      return store.delete(key);
    },

    list(prefix: string, listOpts?: ListOptions): AsyncIterable<ListedObject> {
      // Decided at call time so the draw order follows the call order.
      const fail = shouldFail("list");
      return {
        [Symbol.asyncIterator]() {
          if (fail) {
            return {
              next: () => Promise.reject(new InjectedFaultError("list", prefix, false)),
            };
          }
          return store.list(prefix, listOpts)[Symbol.asyncIterator]();
        },
      };
    },

    // Housekeeping at open, not a store call the fault model covers.
    removeLeftovers(prefix: string): Promise<number> {
      return store.removeLeftovers?.(prefix) ?? Promise.resolve(0);
    },
  };
  passPutMarks(store, wrapped);
  return wrapped;
}
