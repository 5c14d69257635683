/**
 * @module Opening a store as its writer: claim the next manifest with a
 * bumped epoch, load the state, replay the WAL to its first gap, and plant a
 * fence marker there so that no older writer can acknowledge anything again.
 */
import { FencedError, StoreCorruptedError } from "../errors.js";
import { WAL_FENCE_JUMP, manifestKey, walKey } from "./layout.js";
import type { Manifest } from "./manifest.js";
import { publishManifest } from "./checkpoint.js";
import { applyOps, loadSegments, newWalk, readNewestManifest, walkWal, type StoreContext, type WalWalk } from "./recovery.js";
import { deltaOverflows, type DeltaMap, type SortedMap } from "./sorted-map.js";
import { createOnce } from "./store-ops.js";
import { decodeWal, encodeFence } from "./wal-format.js";

/** What a new writer starts from. */
export interface Recovered {
  ctx: StoreContext;
  tree: SortedMap;
  /**
   * The changes replayed from the WAL: what the base manifest's segments
   * lack; undefined when too many to be worth an incremental checkpoint.
   */
  delta: DeltaMap | undefined;
  manifest: Manifest;
  firstSeq: number;
  walk: WalWalk;
}

/**
 * Takes over the store: claims the next manifest with a bumped epoch, loads
 * the state, replays the WAL to its first gap and plants a fence marker
 * there. A fence that lands on an existing object means the object is a
 * late, legitimate WAL write of the previous writer (replay it and move on)
 * or a newer writer's fence (this open lost the race).
 */
export async function recoverAsWriter(ctx: StoreContext): Promise<Recovered> {
  let base: Manifest | undefined;
  let mine: Manifest | undefined;
  for (let attempt = 0; attempt < 8 && mine === undefined; attempt++) {
    base = (await readNewestManifest(ctx))!;
    const claim: Manifest = { ...base, id: base.id + 1, epoch: base.epoch + 1, createdAt: Date.now() };
    try {
      await publishManifest(ctx, claim);
      mine = claim;
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      // A checkpoint of the current writer may have taken the number; only a
      // manifest with an epoch as high as ours means another writer opened.
      const now = (await readNewestManifest(ctx))!;
      if (now.epoch >= claim.epoch) {
        throw new FencedError(`another writer opened the store at the same time (manifest ${now.id} has epoch ${now.epoch})`);
      }
    }
  }
  if (mine === undefined || base === undefined) throw new FencedError("the manifest kept changing while opening; another process is writing");
  let missingSegment = "";
  const tree = await loadSegments(ctx, base, (key) => (missingSegment = key));
  if (tree === undefined) throw new StoreCorruptedError(manifestKey(ctx.prefix, base.id), `the segment "${missingSegment}" it lists is missing`);
  let walk = newWalk(base.walNext);
  let delta: DeltaMap | undefined = new Map();
  const apply = (ops: Parameters<typeof applyOps>[1]) => {
    applyOps(tree, ops, delta);
    if (delta !== undefined && deltaOverflows(delta, tree.size)) delta = undefined;
  };
  for (;;) {
    walk = await walkWal(ctx, walk, apply);
    if (walk.vanished) throw new StoreCorruptedError(walKey(ctx.prefix, walk.pos), "a WAL object vanished during recovery");
    const seq = walk.pos;
    const key = walKey(ctx.prefix, seq);
    const fence = encodeFence(mine.epoch, seq, seq + WAL_FENCE_JUMP);
    const res = await createOnce(ctx.store, key, fence, ctx.retry);
    if (res.created) {
      const fences = [...new Set([...base.fences, ...walk.fences, seq])].sort((a, b) => a - b);
      return { ctx, tree, delta, manifest: { ...mine, fences }, firstSeq: seq + WAL_FENCE_JUMP, walk };
    }
    if (res.existing === null) continue;
    const obj = decodeWal(key, res.existing, seq);
    if (obj.epoch > mine.epoch || (obj.kind === "fence" && obj.epoch === mine.epoch)) {
      throw new FencedError(`another writer (epoch ${obj.epoch}) fenced the store while this one was opening`);
    }
    // The previous writer's object landed after the listing: walk on.
  }
}
