/**
 * @module A checkpoint through a store whose listings are out of key order
 * or repeat keys. A manifest that landed after newer ones took the last key
 * its listing gave for the newest: under a reversed listing, an open's late
 * claim far behind the newest was kept instead of being withdrawn. The
 * garbage collection stopped at the first WAL object past what its manifest
 * covers, so with one listed first (a commit after the checkpoint's cut,
 * under a reversed listing) it deleted no WAL object at all.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, MemoryStore, WriteBatch, type PutOptions } from "taquba";
import { publishManifest } from "../../runtime/engine/checkpoint.js";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { DisorderedListings, type Disorder } from "../support/disordered-listings.js";

const enc = (s: string) => new TextEncoder().encode(s);
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const DISORDERS: Disorder[] = ["reversed", "the first two swapped", "reversed, each key twice"];

/** Disordered listings, and manifest puts held from `holdManifests()` until its `release()`. */
class HeldManifests extends DisorderedListings {
  #held: Promise<void> | undefined;
  holdManifests(): { release(): void } {
    let release!: () => void;
    this.#held = new Promise<void>((r) => {
      release = r;
    });
    return { release };
  }
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (key.startsWith("manifest/")) await this.#held;
    return super.put(key, body, opts);
  }
}

async function keysUnder(store: MemoryStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) keys.push(o.key);
  return keys;
}

async function newestManifest(store: MemoryStore): Promise<Manifest> {
  const keys = await keysUnder(store, "manifest/");
  const key = keys[keys.length - 1]!;
  return decodeManifest(key, (await store.get(key))!.body, parseNumberedKey("", "manifest", key)!);
}

describe("a checkpoint through listings out of key order", () => {
  for (const disorder of DISORDERS) {
    it(`${disorder}: an open's claim that landed three manifests behind the newest is withdrawn, naming the first one past it`, async () => {
      const store = new MemoryStore();
      const engine = await Engine.open(store, MANUAL);
      for (let i = 0; i < 6; i++) {
        await engine.commit(new WriteBatch().put(`k${i}`, enc("v")));
        await engine.checkpoint();
      }
      await engine.close();
      const newest = await newestManifest(store);
      // The garbage collection kept the newest and the two before it: the number before those is free.
      const late: Manifest = { ...newest, id: newest.id - 3, epoch: newest.epoch + 1, lastSegment: 0, opener: "late" };
      const lateKey = `manifest/${String(late.id).padStart(20, "0")}`;
      expect(await store.get(lateKey)).toBeNull();
      const ctx = { store: new DisorderedListings(store, disorder), prefix: "", retry: { attempts: 1 } };
      const err = await publishManifest(ctx, late).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FencedError);
      const firstPast = `manifest/${String(newest.id - 2).padStart(20, "0")}`;
      expect((err as Error).message).toContain(`manifest "${lateKey}" landed after another process had published "${firstPast}"`);
      expect(await store.get(lateKey), "the late claim, withdrawn").toBeNull();
    });

    // Swapping the first two only leaves the newest WAL object last, where stopping at it was harmless.
    if (disorder === "the first two swapped") continue;
    it(`${disorder}: the garbage collection deletes the WAL objects its manifest covers though a newer one is listed first`, async () => {
      const store = new MemoryStore();
      const listed = new HeldManifests(store, disorder);
      const engine = await Engine.open(listed, MANUAL);
      for (let i = 0; i < 8; i++) await engine.commit(new WriteBatch().put(`k${i}`, enc("v")));
      // The checkpoint's cut is taken at the call; its manifest waits until a commit after the cut landed in a WAL
      // object past what the manifest covers, which its garbage collection then lists first.
      const hold = listed.holdManifests();
      const checkpoint = engine.checkpoint();
      await engine.commit(new WriteBatch().put("after", enc("v")));
      hold.release();
      await checkpoint;
      const manifest = await newestManifest(store);
      const covered = (await keysUnder(store, "wal/"))
        .map((k) => parseNumberedKey("", "wal", k)!)
        .filter((seq) => seq < manifest.walNext && !manifest.fences.includes(seq));
      expect(covered, "WAL objects the manifest covers, left behind").toEqual([]);
      await engine.close();
    });
  }
});
