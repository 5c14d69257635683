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
 *
 * Over a source that checks keys once (`Queue.kvKeyRef`), each key is also
 * held as the queue's reference to it, which the queue reads without
 * looking the key up among its kept keys (a hash of the string per read).
 * The references live with the run's keys here, so they leave with them.
 *
 * A run whose end a wait or an outcome read has answered moves to a small
 * bound of its own: its keys stay for the outcome read right after the
 * wait and for reads again soon, but leave after a few dozen later ends
 * instead of hundreds of runs later. Kept among the 512, a run's keys
 * and its decoded end (about 1.9 KB) outlived two young-generation
 * collections and were copied to the old generation; now most leave while
 * still young.
 */
import type { KvKeyRef } from "../../queue/user-keys.js";
import { runKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";
import type { TerminalRecord } from "../records/records.js";

/** A caller key checked once by the queue (`Queue.kvKeyRef`); throws for a key that is not valid. */
export type KeyRefOf = (key: string) => KvKeyRef;

/**
 * Runs whose keys a view keeps: more than the runs a process usually waits
 * on at once; about 0.4 KB each, plus a terminated run's record (some
 * 0.3 KB, up to 1.5 KB with an outcome kept inline) and the stored value it
 * was decoded from, which the record's token holds.
 */
export const VIEW_RUN_KEYS_KEPT = 512;

/** Runs whose end was read whose keys a view keeps besides (see `ViewRunKeys.ended`). */
export const VIEW_ENDED_RUN_KEYS_KEPT = 32;

/** One run's three record keys, and its terminal record as last decoded. */
export class RunKeysRead {
  readonly run: string;
  readonly pointer: string;
  readonly terminal: string;
  /** What the view hands the source for each key: the queue's reference when it makes them, else the key. */
  readonly runRef: string | KvKeyRef;
  readonly pointerRef: string | KvKeyRef;
  readonly terminalRef: string | KvKeyRef;
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

  constructor(queueName: string, runId: string, keyRef?: KeyRefOf) {
    this.run = runKey(queueName, runId);
    this.pointer = stepPointerKey(queueName, runId);
    this.terminal = terminalRecordKey(queueName, runId);
    this.runRef = refOf(this.run, keyRef);
    this.pointerRef = refOf(this.pointer, keyRef);
    this.terminalRef = refOf(this.terminal, keyRef);
    this.terminalToken = undefined;
    this.terminalRecord = undefined;
    this.terminalDurable = false;
  }
}

/**
 * `key`'s reference, or `key` itself when there is no maker or the queue
 * refuses it: a read of the key then fails as it did without references.
 */
function refOf(key: string, keyRef: KeyRefOf | undefined): string | KvKeyRef {
  if (keyRef === undefined) return key;
  try {
    return keyRef(key);
  } catch {
    return key;
  }
}

/**
 * The keys of the runs of one step queue, for the last `kept` runs asked
 * for: a bounded map (oldest first out), so a view that reads millions of
 * runs holds no more than `kept` of them, nor of their key references.
 * Runs whose end was read (`ended`) leave that map for a smaller one of
 * `endedKept`, oldest first out.
 */
export class ViewRunKeys {
  readonly #queueName: string;
  readonly #kept: number;
  readonly #keyRef: KeyRefOf | undefined;
  readonly #endedKept: number;
  readonly #byRun = new Map<string, RunKeysRead>();
  /** Runs whose end was read, oldest first: apart, so the runs still read leave no sooner for them. */
  readonly #ended = new Map<string, RunKeysRead>();

  /** `keyRef`: the source's maker of key references (`Queue.kvKeyRef`), when it has one. */
  constructor(queueName: string, kept = VIEW_RUN_KEYS_KEPT, keyRef?: KeyRefOf, endedKept = VIEW_ENDED_RUN_KEYS_KEPT) {
    this.#queueName = queueName;
    this.#kept = kept;
    this.#keyRef = keyRef;
    this.#endedKept = endedKept;
  }

  /** The keys of `runId` (a run id already parsed). */
  of(runId: string): RunKeysRead {
    const m = this.#byRun;
    const found = m.get(runId) ?? this.#ended.get(runId);
    if (found !== undefined) return found;
    const keys = new RunKeysRead(this.#queueName, runId, this.#keyRef);
    if (m.size >= this.#kept) m.delete(m.keys().next().value as string);
    m.set(runId, keys);
    return keys;
  }

  /** The keys of `runId` when they are kept (a reader read the run lately), without building them. */
  kept(runId: string): RunKeysRead | undefined {
    return this.#byRun.get(runId) ?? this.#ended.get(runId);
  }

  /**
   * Notes that a reader was answered `runId`'s end (a wait's or an
   * outcome's): its keys, if kept among the runs read, move to the bound of
   * ended runs. A run read again later is read as before: from these keys
   * while they are kept, from keys built again after.
   */
  ended(runId: string): void {
    const keys = this.#byRun.get(runId);
    if (keys === undefined) return;
    this.#byRun.delete(runId);
    const e = this.#ended;
    if (e.size >= this.#endedKept) e.delete(e.keys().next().value as string);
    e.set(runId, keys);
  }

  /** How many runs' keys are kept, ended ones included (for tests of the bound). */
  get size(): number {
    return this.#byRun.size + this.#ended.size;
  }
}
