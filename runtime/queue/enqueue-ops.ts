/**
 * @module Enqueue paths: single, batch and with effects. Each validates
 * everything first, offloads large payloads, then runs one transaction and
 * waits for its durable commit.
 */
import { TaqubaError } from "../errors.js";
import type { SettlementEffects } from "./effects.js";
import type { QueueCore } from "./queue-core.js";
import { insertJob } from "./transitions.js";
import { Txn } from "./txn.js";
import type { EnqueueItem, EnqueueOptions, EnqueueOutcome } from "./types.js";
import { checkPayloadSizes } from "./payload-limit.js";
import { enqueuedNowItem, heldItem, ownEnqueueItem } from "./validate-enqueue.js";
import { payloadSize } from "./payload-at-call.js";
import { jobKey, userKey } from "./keys.js";
import { sameKvValue, type KvExpectation } from "./kv-ops.js";
import { validateKvKey } from "./names.js";

/**
 * A fresh id for a caller to pass as `EnqueueOptions.jobId`: the next one
 * drawn that no job holds. Ids drawn within one millisecond count up by
 * one, so a caller can take the one drawn next; the workflow runtime names
 * its step jobs with these ids before it enqueues them, and a taken one
 * would fail that enqueue with `DuplicateJobIdError`. Looked up only when
 * a caller's job may hold that very id (`CallerIdBound`), and passed over
 * when an enqueue under way names it: a step's next
 * job usually needs no lookup, nor does a draw below a far-future caller
 * id. Ends: callers hold finitely many ids.
 */
export function freshJobId(core: QueueCore): string {
  let id = core.newId();
  while (core.callerIds.mayHold(id) && (core.callerIds.inFlight(id) || core.engine.has(jobKey(id)))) id = core.newId();
  return id;
}

/**
 * Enqueues `items` atomically; a duplicate caller id fails the whole call.
 * Each item's fields are read once already (`readEnqueueItems`, or built by the queue).
 */
export async function enqueueItems(core: QueueCore, items: readonly EnqueueItem[], inBatch = false): Promise<EnqueueOutcome[]> {
  core.checkOpen();
  // Each item as checked now: a large payload's write is awaited before the insert, and the caller's objects may change meanwhile.
  let own = inBatch ? items.map(checkedBatchItem) : items.map(({ queueName, payload, opts }) => enqueuedNowItem(queueName, payload, opts));
  if (offloadsAny(core, own)) own = heldItems(core, own);
  const ready = core.prepare(own);
  // Not awaited when nothing is offloaded: the records are encoded in the call's turn, from the bytes the call saw.
  const prepared = Array.isArray(ready) ? ready : await ready;
  let outcomes: EnqueueOutcome[] | undefined;
  let commit: Promise<void>;
  const ctx = core.ctx(prepared);
  try {
    core.checkOpen();
    const txn = new Txn(core.engine);
    outcomes = core.applyEffects(txn, ctx, undefined, prepared);
    commit = core.commit(txn, true);
  } finally {
    core.discardUnused(prepared, outcomes);
  }
  await commit;
  core.announceInserted(prepared, outcomes, ctx.now);
  return outcomes;
}

/**
 * Whether one of `items` will be offloaded: its write is awaited before the
 * records are encoded, so every payload of the commit must then be a copy
 * (`heldItem`), or the caller could change the bytes in that turn.
 */
function offloadsAny(core: QueueCore, items: readonly EnqueueItem[]): boolean {
  const threshold = core.payloads.threshold;
  if (threshold === null) return false;
  for (const i of items) if (payloadSize(i.payload) > threshold) return true;
  return false;
}

/**
 * `items` as copies (`heldItem`), once their sizes are checked: a payload
 * over the queue's limit is refused before a copy of it is made (`prepare`
 * checks the sizes again for every path).
 */
function heldItems(core: QueueCore, items: readonly EnqueueItem[]): EnqueueItem[] {
  checkPayloadSizes(items, core.maxPayloadBytes);
  return items.map(heldItem);
}

/**
 * The items of one enqueue with effects: `own`, then the staged ones. Those
 * hold copies already (`checkedEnqueueItem`), or are checked and copied
 * here when pushed by hand; `own` is copied when an offload awaits.
 */
function commitItems(core: QueueCore, own: EnqueueItem, staged: readonly EnqueueItem[], extra: readonly EnqueueItem[]): EnqueueItem[] {
  const items = [own, ...staged, ...extra];
  if (core.payloads.threshold === null) return items;
  // An item pushed by hand is read once, here: its checked copy is what the offload test and the commit see.
  for (let i = 1; i < items.length; i++) items[i] = ownEnqueueItem(items[i]!);
  if (offloadsAny(core, items)) items[0] = heldItems(core, [own])[0]!;
  return items;
}

/** `enqueuedNowItem` of `enqueueBatch`'s item `i`: a refusal (of any class) names the item. */
function checkedBatchItem(item: EnqueueItem, i: number): EnqueueItem {
  try {
    return enqueuedNowItem(item.queueName, item.payload, item.opts);
  } catch (err) {
    if (err instanceof TaqubaError) err.message = `enqueueBatch item ${i}: ${err.message}`;
    throw err;
  }
}

/**
 * What an enqueue must supersede for its commit to stand (a debounced run's
 * submission): exactly job `jobId` (undefined: none), and `effects` commit
 * with the supersession. Read before the commit, so checked inside it.
 */
export interface ExpectedSupersede {
  jobId: string | undefined;
  effects: SettlementEffects;
}

/**
 * One job plus `effects` in one commit; a dedup hit writes nothing. With
 * `expected`, nothing is written and `"raced"` returned when the insert
 * would supersede another job than the expected one (the window changed
 * since it was read). With `unchanged`, nothing is written and `"raced"`
 * returned when one of those caller keys no longer holds its value.
 */
export async function enqueueWithEffects(
  core: QueueCore,
  queueName: string,
  payload: Uint8Array,
  opts: EnqueueOptions,
  effects: SettlementEffects,
  expected?: ExpectedSupersede,
  unchanged: readonly KvExpectation[] = [],
): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] } | "raced"> {
  core.checkOpen();
  const own = enqueuedNowItem(queueName, payload, opts);
  for (const u of unchanged) validateKvKey(u.key);
  const ready = core.prepare(commitItems(core, own, effects.enqueues, expected?.effects.enqueues ?? []));
  const prepared = Array.isArray(ready) ? ready : await ready;
  let outcomes: EnqueueOutcome[] | undefined;
  let commit: Promise<void> | undefined;
  const ctx = core.ctx(prepared);
  try {
    core.checkOpen();
    const txn = new Txn(core.engine);
    // Read in the commit's own turn: no other commit lands between this check and the insert.
    for (const u of unchanged) if (!sameKvValue(txn.get(userKey(u.key)), u.value)) return "raced";
    const first = insertJob(txn, ctx, prepared[0]!);
    if (expected !== undefined && first.newlyEnqueued && first.superseded !== expected.jobId) return "raced";
    if (first.newlyEnqueued) {
      const own = prepared.slice(1, 1 + effects.enqueues.length);
      outcomes = [first, ...core.applyEffects(txn, ctx, effects, own)];
      if (expected !== undefined && expected.jobId !== undefined)
        // A new list, not a push: its elements are defined, none handed to a setter a prototype holds under its index.
        outcomes = [...outcomes, ...core.applyEffects(txn, ctx, expected.effects, prepared.slice(1 + own.length))];
      commit = core.commit(txn, true);
    } else outcomes = [first];
  } finally {
    core.discardUnused(prepared, outcomes);
  }
  if (commit !== undefined) {
    await commit;
    core.announceInserted(prepared, outcomes, ctx.now);
  }
  return { outcome: outcomes[0]!, enqueued: outcomes.slice(1, 1 + effects.enqueues.length) };
}
