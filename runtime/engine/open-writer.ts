/**
 * @module Opening a store as its writer: load and check the durable state,
 * claim the next manifest with a bumped epoch, replay what the previous
 * writer landed meanwhile, and plant a fence marker at the end of the log so
 * that no older writer can acknowledge anything again.
 *
 * Everything that can refuse the open (a missing WAL object, segment or
 * manifest, unexplained objects) runs before the claim, so a refused open
 * writes no manifest and changes nothing durable; except when the store
 * changed under that load and the open claimed first: a refusal under the
 * claim leaves it (a copy of the newest manifest with the epoch bumped, so
 * the durable state is the same), since another opener may have read it.
 */
import { FencedError, StoreCorruptedError, StoreUnavailableError } from "../errors.js";
import { WAL_FENCE_JUMP, manifestKey, walKey } from "./layout.js";
import type { Manifest } from "./manifest.js";
import { ClaimRace, claimAfter, newestFrom, type ClaimOutcome } from "./open-claim.js";
import { applyOps } from "./apply-ops.js";
import {
  explainGap,
  loadState,
  missingWalError,
  readNewestManifest,
  walkWal,
  type LoadedState,
  type LoadOptions,
  type StoreContext,
  type WalWalk,
} from "./recovery.js";
import { deltaOverflows, type DeltaMap } from "./sorted-map.js";
import type { KeyHeads } from "./key-heads.js";
import { ValueArena, type PagePolicy, type StateMap } from "./paged-value.js";
import { createOnce } from "./store-ops.js";
import { openWrite } from "./store-refusal.js";
import { decodeWal, encodeFence } from "./wal-format.js";

/** What a new writer starts from. */
export interface Recovered {
  ctx: StoreContext;
  tree: StateMap;
  /**
   * The changes replayed from the WAL: what the base manifest's segments
   * lack; undefined when too many to be worth an incremental checkpoint.
   */
  delta: DeltaMap | undefined;
  manifest: Manifest;
  firstSeq: number;
  walk: WalWalk;
  /** The block index of each segment the open read, by name (with a paging policy), for the value pager. */
  indexes: LoadedState["indexes"];
}

/**
 * Takes over the store: loads and checks the state (refusing with
 * `StoreCorruptedError` before writing anything), claims the next manifest
 * with a bumped epoch (dated by `now`, the engine's clock), then walks on to
 * the end of the log and plants a fence marker there. A fence that lands on
 * an existing object means the object is a late, legitimate WAL write of the previous writer (replay it
 * and move on) or a newer writer's fence (this open lost the race). With a
 * `policy`, the values it lets page out stay in their segments.
 *
 * When the store changed under that first load (a live writer checkpointed
 * meanwhile, and one that checkpoints more often than a load takes would
 * win every time), the open claims first: the old writer's next manifest
 * then fails, so the state under the claim holds still while it loads. A
 * claim that lost its number is retried on the manifest that took it
 * (open-claim.ts), until the bound of `ClaimRace`. A claim that landed is
 * never deleted, even by a refused open: another opener may have read it
 * as the newest manifest, and deleting it would free its number for the
 * old writer's next checkpoint, whose garbage collection then deletes WAL
 * the other opener still needs.
 */
export async function recoverAsWriter(
  ctx: StoreContext,
  policy?: PagePolicy,
  now: () => number = Date.now,
  memtableKeys?: number,
  keyHeads?: KeyHeads,
): Promise<Recovered> {
  const loadOptions = {
    trackDelta: true,
    checkSegments: true,
    ...(policy === undefined ? {} : { policy }),
    ...(memtableKeys === undefined ? {} : { memtableKeys }),
    ...(keyHeads === undefined ? {} : { keyHeads }),
  };
  const loaded = await loadState(ctx, loadOptions);
  const race = new ClaimRace(ctx.prefix, now);
  let base: Manifest;
  if (loaded !== undefined) {
    let first: ClaimOutcome;
    try {
      first = await claimAfter(ctx, loaded.manifest, now);
    } catch (err) {
      // The open is abandoned: its loaded state is dropped, so it stops merging in idle turns.
      loaded.tree.stopIdleMerges();
      throw err;
    }
    if ("claim" in first) return fenceOrDrop(ctx, loaded.manifest, first.claim, loaded, policy);
    loaded.tree.stopIdleMerges(); // a checkpoint took the manifest number
    base = first.lostTo;
    await race.lost();
  } else {
    base = (await readNewestManifest(ctx))!;
  }
  for (;;) {
    base = await newestFrom(ctx, base, race);
    const out = await claimAfter(ctx, base, now);
    if ("claim" in out) {
      const under = await loadUnderClaim(ctx, { ...loadOptions, under: { manifest: base, claimed: out.claim.id } });
      return fenceOrDrop(ctx, base, out.claim, under, policy);
    }
    // A checkpoint landed between the read and the claim: the manifest it published is the next base.
    base = out.lostTo;
    await race.lost();
  }
}

/** Plants the fence; an error drops the loaded state, so it stops merging in idle turns. */
async function fenceOrDrop(ctx: StoreContext, base: Manifest, claim: Manifest, loaded: LoadedState, policy?: PagePolicy): Promise<Recovered> {
  try {
    return await plantFence(ctx, base, claim, loaded, policy);
  } catch (err) {
    loaded.tree.stopIdleMerges();
    throw err;
  }
}

/**
 * Loads the state of the manifest under this open's claim. Only a newer
 * writer can change it now, so a load that finds the store changed means
 * this open lost. A load that refuses (or fails) leaves the claim: it holds
 * the state of the manifest it copies, so nothing is lost, and the old
 * writer fails at its next checkpoint while every commit it acknowledged
 * stays in the WAL for the next open to replay.
 */
async function loadUnderClaim(ctx: StoreContext, opts: LoadOptions & { under: { manifest: Manifest; claimed: number } }): Promise<LoadedState> {
  const loaded = await loadState(ctx, opts);
  if (loaded !== undefined) return loaded;
  const now = (await readNewestManifest(ctx))!;
  if (now.id > opts.under.claimed) {
    throw new FencedError(`another writer (manifest ${now.id}, epoch ${now.epoch}) opened the store while this one was opening`);
  }
  // No newer manifest, yet objects the loaded manifest needs vanished while read: someone else is deleting.
  throw new StoreUnavailableError(
    "open",
    manifestKey(ctx.prefix, opts.under.manifest.id),
    new Error("objects it needs vanished while they were read"),
    "check that nothing else deletes objects under this prefix, then open again",
  );
}

/**
 * Times in a row the fence may find its place taken by an object of the
 * previous writer before the open gives up. A writer that stopped has at
 * most `WAL_FENCE_JUMP - 1` puts in flight, so only one still committing
 * (it learns of the claim only at its next checkpoint or at the fence) can
 * take every place; without a bound, such a writer would hold the open off
 * for as long as it commits.
 */
export const MAX_FENCE_RACES = WAL_FENCE_JUMP;

/** After the claim: replays what the previous writer landed since the load and fences the end of the log. */
async function plantFence(ctx: StoreContext, base: Manifest, mine: Manifest, loaded: LoadedState, policy?: PagePolicy): Promise<Recovered> {
  const { tree } = loaded;
  let { walk, delta } = loaded;
  const arena = policy === undefined ? undefined : new ValueArena();
  const apply = (ops: Parameters<typeof applyOps>[1]) => {
    if (delta !== undefined && !delta.hasRoomFor(ops)) delta = undefined;
    applyOps(tree, ops, delta, policy, arena);
    if (delta !== undefined && deltaOverflows(delta, tree.size)) delta = undefined;
  };
  for (let races = 0; ; races++) {
    if (races === MAX_FENCE_RACES) {
      // The claim stays: the previous writer fails at its next checkpoint, and an open after that wins.
      throw new StoreUnavailableError(
        "open",
        walKey(ctx.prefix, walk.pos),
        new Error(`the log kept changing under the fence: another writer appended to it first, ${MAX_FENCE_RACES} times in a row`),
        "another process is still committing to this store: stop it (close or end it), then open again",
      );
    }
    walk = await walkWal(ctx, walk, apply);
    if (walk.vanished) throw new StoreCorruptedError(walKey(ctx.prefix, walk.pos), "a WAL object vanished during recovery");
    // A newer writer's fence (or its commits) in the log: it opened on this claim. A fence planted past it would let
    // this open acknowledge commits that every later replay skips as an older epoch's.
    if (walk.maxEpoch > mine.epoch) {
      throw new FencedError(`another writer (epoch ${walk.maxEpoch}) fenced the store while this one was opening`);
    }
    const gap = await explainGap(ctx, walk);
    if (gap !== undefined) {
      const now = (await readNewestManifest(ctx))!;
      if (now.epoch > mine.epoch) throw new FencedError(`another writer (epoch ${now.epoch}) opened the store while this one was opening`);
      throw missingWalError(ctx, walk.pos, gap === "vanished" ? "an object past it vanished while being read" : gap);
    }
    const seq = walk.pos;
    const key = walKey(ctx.prefix, seq);
    const fence = encodeFence(mine.epoch, seq, seq + WAL_FENCE_JUMP);
    const res = await openWrite(() => createOnce(ctx.store, key, fence, ctx.retry));
    if (res.created) {
      const fences = [...new Set([...base.fences, ...walk.fences, seq])].sort((a, b) => a - b);
      return { ctx, tree, delta, manifest: { ...mine, fences }, firstSeq: seq + WAL_FENCE_JUMP, walk, indexes: loaded.indexes };
    }
    if (res.existing === null) continue;
    const obj = decodeWal(key, res.existing, seq);
    if (obj.epoch > mine.epoch || (obj.kind === "fence" && obj.epoch === mine.epoch)) {
      throw new FencedError(`another writer (epoch ${obj.epoch}) fenced the store while this one was opening`);
    }
    // The previous writer's object landed after the listing: walk on.
  }
}
