/**
 * @module The KV keys of the runs a view reads in its turn (`WorkflowView`'s
 * lent reads), kept per run for the runs read last, with the terminal
 * record each terminated one was last read as.
 *
 * A wait reads a run's records at least twice (once active, once
 * terminated) and the outcome once more: each read concatenated the run's
 * key strings anew, and the queue then flattened and hashed each to look it
 * up among its checked keys. A run's keys never change, so they are built
 * once per run, and each later read hands the queue a flat string whose
 * hash is already known. Likewise the wait's end and the outcome read
 * decoded the same terminal record each: it is decoded once per stored
 * value, and read again only when its value token (`Queue.kvTokenNow`)
 * changed.
 */
import { runKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";
import type { TerminalRecord } from "../records/records.js";

/**
 * Runs whose keys a view keeps: more than the runs a process usually waits
 * on at once; about 0.4 KB each, plus a terminated run's record (some
 * 0.3 KB, up to 1.5 KB with an outcome kept inline) and the stored value it
 * was decoded from, which the record's token holds.
 */
export const VIEW_RUN_KEYS_KEPT = 512;

/** One run's three record keys, and its terminal record as last decoded. */
export class RunKeysRead {
  readonly run: string;
  readonly pointer: string;
  readonly terminal: string;
  /**
   * The value token of the terminal record's key (`Queue.kvTokenNow`) in
   * the turn `terminalRecord` was decoded from it: while the key's token is
   * this one, the stored record is the same bytes. Undefined until then.
   */
  terminalToken: unknown;
  /** Shared by every read that finds the same token: never changed by a reader. */
  terminalRecord: TerminalRecord | undefined;
  /**
   * Whether `terminalRecord` is known durable: a read of it was followed by
   * the view's `durable()` (a wait's end), so a later read of the same
   * token need not wait for durability again. False for a record decoded anew.
   */
  terminalDurable: boolean;

  constructor(queueName: string, runId: string) {
    this.run = runKey(queueName, runId);
    this.pointer = stepPointerKey(queueName, runId);
    this.terminal = terminalRecordKey(queueName, runId);
    this.terminalToken = undefined;
    this.terminalRecord = undefined;
    this.terminalDurable = false;
  }
}

/**
 * The keys of the runs of one step queue, for the last `kept` runs asked
 * for: a bounded map (oldest first out), so a view that reads millions of
 * runs holds no more than `kept` of them.
 */
export class ViewRunKeys {
  readonly #queueName: string;
  readonly #kept: number;
  readonly #byRun = new Map<string, RunKeysRead>();

  constructor(queueName: string, kept = VIEW_RUN_KEYS_KEPT) {
    this.#queueName = queueName;
    this.#kept = kept;
  }

  /** The keys of `runId` (a run id already parsed). */
  of(runId: string): RunKeysRead {
    const m = this.#byRun;
    const found = m.get(runId);
    if (found !== undefined) return found;
    const keys = new RunKeysRead(this.#queueName, runId);
    if (m.size >= this.#kept) m.delete(m.keys().next().value as string);
    m.set(runId, keys);
    return keys;
  }

  /** How many runs' keys are kept (for tests of the bound). */
  get size(): number {
    return this.#byRun.size;
  }
}
