/**
 * @module The KV keys of the runs a view reads in its turn (`WorkflowView`'s
 * lent reads), kept per run for the runs read last.
 *
 * A wait reads a run's records at least twice (once active, once
 * terminated) and the outcome once more: each read concatenated the run's
 * key strings anew, and the queue then flattened and hashed each to look it
 * up among its checked keys. A run's keys never change, so they are built
 * once per run, and each later read hands the queue a flat string whose
 * hash is already known.
 */
import { runKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";

/** Runs whose keys a view keeps: more than the runs a process usually waits on at once; about 0.4 KB each. */
export const VIEW_RUN_KEYS_KEPT = 512;

/** One run's three record keys. */
export class RunKeysRead {
  readonly run: string;
  readonly pointer: string;
  readonly terminal: string;

  constructor(queueName: string, runId: string) {
    this.run = runKey(queueName, runId);
    this.pointer = stepPointerKey(queueName, runId);
    this.terminal = terminalRecordKey(queueName, runId);
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
