/**
 * @module `Queue.recountStats` without holding the owner for the whole
 * read. One short turn takes a snapshot of the engine's keys (copy on
 * write) with the stats record's bytes and the done jobs the claimed
 * entries carry; the queue's pending, scheduled, dead and retained done
 * entries are then counted from the snapshot in slices, other work (every
 * move of every queue) running between them; a last short turn reads the
 * record again, counts the claimed entries, adds what the moves since did
 * to the record (stats-recount.ts `recountSince`) and commits. The answer
 * is the count of the indexes at that last turn. Recounts of one queue run
 * one after another: a recount's write is not a move, so a second recount
 * must take its snapshot after the first committed.
 */
import { ClosedError } from "../errors.js";
import * as K from "./keys.js";
import { ownedBytes } from "./owned-bytes.js";
import type { QueueCore } from "./queue-core.js";
import { StatsPlanChangedError } from "./errors.js";
import type { SettlementEffects } from "./effects.js";
import {
  type CheckedRecountOptions,
  countSnapshotSlices,
  readableCarriedDone,
  recountFrom,
  recountSince,
  type SnapshotCount,
  type StatsRecount,
} from "./stats-recount.js";
import { Txn } from "./txn.js";

/** Index entries a recount reads per turn of the owner. */
export const RECOUNT_SLICE_ENTRIES = 1024;

/** How a recount lets other work run between its slices (a test may hold it there). */
export type RecountPause = () => Promise<void>;

const nextTurn: RecountPause = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The recounts of one queue owner, one at a time per queue. */
export class StatsRecounts {
  readonly #core: QueueCore;
  readonly #running = new Map<string, Promise<unknown>>();
  /** @internal Between slices; a test replaces it to move jobs in the middle of a recount. */
  pause: RecountPause = nextTurn;
  /** @internal Entries per slice. */
  slice = RECOUNT_SLICE_ENTRIES;

  constructor(core: QueueCore) {
    this.#core = core;
  }

  /** `Queue.recountStats` (options checked): after any recount of `queueName` still running. */
  run(queueName: string, o: CheckedRecountOptions, mark?: (answer: StatsRecount) => SettlementEffects): Promise<StatsRecount> {
    const before = this.#running.get(queueName);
    const mine = (
      before === undefined ? this.#recount(queueName, o, mark) : before.then(nothing, nothing).then(() => this.#recount(queueName, o, mark))
    ).finally(() => {
      if (this.#running.get(queueName) === mine) this.#running.delete(queueName);
    });
    this.#running.set(queueName, mine);
    return mine;
  }

  async #recount(queueName: string, o: CheckedRecountOptions, mark?: (answer: StatsRecount) => SettlementEffects): Promise<StatsRecount> {
    const core = this.#core;
    core.checkOpen();
    const engine = core.engine;
    // The snapshot's turn: the record's bytes, the carried done jobs and the keys, all at one moment.
    const stored = engine.get(K.statsKey(queueName));
    const storedBytes = stored === undefined ? undefined : stored.slice();
    const carried = readableCarriedDone(engine, queueName);
    const slices = countSnapshotSlices(engine.keysSnapshot(), queueName, this.slice);
    let step = slices.next();
    while (step.done !== true) {
      await this.pause();
      this.#checkOpen(queueName);
      step = slices.next();
    }
    const base: SnapshotCount = { storedBytes, carried, ...step.value };
    // The commit's turn: from here to the commit nothing awaits.
    this.#checkOpen(queueName);
    const { recount, bytes } = recountSince(engine, queueName, base) ?? recountFrom(engine, queueName);
    if (o.plan !== undefined && o.plan !== recount.plan) throw new StatsPlanChangedError(queueName);
    const answer: StatsRecount = { ...recount, dryRun: o.dryRun };
    if (o.dryRun || !recount.changed) return answer;
    const txn = new Txn(engine);
    txn.put(K.statsKey(queueName), ownedBytes(bytes));
    if (mark !== undefined) core.applyEffects(txn, core.ctx(), mark(answer), []);
    await core.commit(txn, true);
    return answer;
  }

  #checkOpen(queueName: string): void {
    const core = this.#core;
    if (core.isClosed)
      throw new ClosedError(`queue "${core.name}" (closed while it recounted the stats of queue "${queueName}": nothing was written)`, core.engine.failure);
  }
}

const nothing = () => undefined;
