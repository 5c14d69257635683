/**
 * @module An open's claim lost to a live writer whose manifests all vanish
 * from the listing that looks for the newest (deleted between the listing's
 * reads, as a writer checkpointing without pause deletes each manifest once
 * three newer ones exist). A listing that finds no manifest at or past the
 * lost claim's number lost them: the claim must not take the empty store's
 * manifest for its next base (its claim of manifest 1 then met the writer's
 * manifests, of the epoch the claim bumped to, and the open failed with
 * `FencedError` as if another writer had opened).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, type ListOptions, type ListedObject } from "taquba";
import { claimAfter } from "../../runtime/engine/open-claim.js";
import { encodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { manifestKey } from "../../runtime/engine/layout.js";
import { ForwardingStore } from "../support/forwarding-store.js";

/** A store whose listings of every manifest come back empty while `losing` is set (those after a key are left alone). */
class LosingManifests extends ForwardingStore {
  losing = false;
  override async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    if (this.losing && prefix === "manifest/" && opts?.startAfter === undefined) return;
    yield* super.list(prefix, opts);
  }
}

const manifest = (id: number): Manifest => ({ id, epoch: 1, walNext: 1, segments: [], fences: [], createdAt: 0, lastSegment: 0 });

describe("an open's claim lost to a writer whose manifests vanish from the listing", () => {
  it("claims again from its own base, never from the empty store's manifest", async () => {
    const inner = new MemoryStore();
    // The live writer (epoch 1) is at manifest 12; 9 was collected, and 8, the open's base, too.
    for (const id of [10, 11, 12]) await inner.put(manifestKey("", id), encodeManifest(manifest(id)));
    const store = new LosingManifests(inner);
    store.losing = true;
    const ctx = { store, prefix: "", retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } };
    const out = await claimAfter(ctx, manifest(8), () => 0);
    expect("lostTo" in out, "the claim of 9 lands below newer manifests: lost").toBe(true);
    if (!("lostTo" in out)) return;
    expect(out.lostTo.id, "the next base is the open's own, not the empty store's").toBe(8);
    expect(out.lostTo.epoch).toBe(1);
    // The claim it made landed and was withdrawn: nothing of it stays.
    expect(await inner.get(manifestKey("", 9))).toBeNull();
    // Once the listing finds the writer's manifests again, the claim loses to the newest.
    store.losing = false;
    const next = await claimAfter(ctx, out.lostTo, () => 0);
    expect("lostTo" in next && next.lostTo.id).toBe(12);
  });
});
