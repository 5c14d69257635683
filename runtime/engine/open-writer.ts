/**
 * @module Opening a store as its writer: load and check the durable state,
 * claim the next manifest with a bumped epoch, replay what the previous
 * writer landed meanwhile, and plant a fence marker at the end of the log so
 * that no older writer can acknowledge anything again.
 *
 * Everything that can refuse the open (a missing WAL object, segment or
 * manifest, unexplained objects) runs before the claim, so a refused open
 * writes no manifest and changes nothing durable.
 */
import { FencedError, StoreCorruptedError, StoreUnavailableError } from "../errors.js";
import { WAL_FENCE_JUMP, manifestKey, walKey } from "./layout.js";
import type { Manifest } from "./manifest.js";
import { publishManifest } from "./checkpoint.js";
import {
  applyOps,
  explainGap,
  loadState,
  missingWalError,
  readNewestManifest,
  walkWal,
  type LoadedState,
  type StoreContext,
  type WalWalk,
} from "./recovery.js";
import { deltaOverflows, type DeltaMap } from "./sorted-map.js";
import { ValueArena, type PagePolicy, type StateMap } from "./paged-value.js";
import { createOnce } from "./store-ops.js";
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

/** Loads and claims at most this many times when a checkpoint or another writer keeps changing the store. */
const MAX_ATTEMPTS = 8;

/**
 * Takes over the store: loads and checks the state (refusing with
 * `StoreCorruptedError` before writing anything), claims the next manifest
 * with a bumped epoch, then walks on to the end of the log and plants a
 * fence marker there. A fence that lands on an existing object means the
 * object is a late, legitimate WAL write of the previous writer (replay it
 * and move on) or a newer writer's fence (this open lost the race). With a
 * `policy`, the values it lets page out stay in their segments.
 */
export async function recoverAsWriter(ctx: StoreContext, policy?: PagePolicy): Promise<Recovered> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const loaded = await loadState(ctx, { trackDelta: true, checkSegments: true, ...(policy === undefined ? {} : { policy }) });
    if (loaded === undefined) continue; // a checkpoint changed the store mid-load
    try {
      const claimed = await claimAndFence(ctx, loaded, policy);
      if (claimed !== undefined) return claimed;
    } catch (err) {
      // The open is abandoned: its loaded state is dropped, so it stops merging in idle turns.
      loaded.tree.stopIdleMerges();
      throw err;
    }
    loaded.tree.stopIdleMerges(); // a checkpoint took the manifest number: load again
  }
  throw new StoreUnavailableError(
    "open",
    manifestKey(ctx.prefix, 0),
    new Error(`the store kept changing under the opening writer ${MAX_ATTEMPTS} times in a row`),
  );
}

/**
 * Claims the manifest after `loaded` and fences the log; undefined when a
 * checkpoint of the current writer took the number (load again).
 */
async function claimAndFence(ctx: StoreContext, loaded: LoadedState, policy?: PagePolicy): Promise<Recovered | undefined> {
  const base = loaded.manifest;
  const claim: Manifest = { ...base, id: base.id + 1, epoch: base.epoch + 1, createdAt: Date.now(), lastSegment: 0 };
  try {
    await publishManifest(ctx, claim);
  } catch (err) {
    if (!(err instanceof FencedError)) throw err;
    // A checkpoint of the current writer may have taken the number; only a
    // manifest with an epoch as high as ours means another writer opened.
    const now = (await readNewestManifest(ctx))!;
    if (now.epoch >= claim.epoch) {
      throw new FencedError(`another writer opened the store at the same time (manifest ${now.id} has epoch ${now.epoch})`);
    }
    return undefined;
  }
  return plantFence(ctx, base, claim, loaded, policy);
}

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
  for (;;) {
    walk = await walkWal(ctx, walk, apply);
    if (walk.vanished) throw new StoreCorruptedError(walKey(ctx.prefix, walk.pos), "a WAL object vanished during recovery");
    const gap = await explainGap(ctx, walk);
    if (gap !== undefined) {
      const now = (await readNewestManifest(ctx))!;
      if (now.epoch > mine.epoch) throw new FencedError(`another writer (epoch ${now.epoch}) opened the store while this one was opening`);
      throw missingWalError(ctx, walk.pos, gap === "vanished" ? "an object past it vanished while being read" : gap);
    }
    const seq = walk.pos;
    const key = walKey(ctx.prefix, seq);
    const fence = encodeFence(mine.epoch, seq, seq + WAL_FENCE_JUMP);
    const res = await createOnce(ctx.store, key, fence, ctx.retry);
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
