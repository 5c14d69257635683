/**
 * @module `Engine.checkpoint()` returns once a manifest covering every
 * commit made before the call is published (and its deletions ended): it
 * waits for a checkpoint cut after the call, or one already running whose
 * cut covers the call, and never for checkpoints that start after that one
 * while commits keep coming. Manifest puts are held and released one at a
 * time, so which checkpoint the call waits for is decided by the test, not
 * by timing.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { GatedStore } from "../support/gated-store.js";
import { settlesWithinTurns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
/** A checkpoint at every WAL object, no backlog bound: commits never wait on checkpoints here. */
const eager = { checkpointWalObjects: 1, checkpointWalBytes: 0, checkpointBacklog: 0, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } };

async function newestManifest(store: MemoryStore) {
  const keys: string[] = [];
  for await (const o of store.list("manifest/")) keys.push(o.key);
  const key = keys.sort().at(-1)!;
  return decodeManifest(key, (await store.get(key))!.body, parseNumberedKey("", "manifest", key)!);
}

/** The sequence number of the newest WAL object in `store`. */
async function newestWal(store: MemoryStore): Promise<number> {
  let seq = 0;
  for await (const o of store.list("wal/")) seq = Math.max(seq, parseNumberedKey("", "wal", o.key)!);
  return seq;
}

/** An engine with a seeded state and one checkpoint published, its later manifest puts held once `gate.holding`. */
async function openGated() {
  const inner = new MemoryStore();
  let holding = false;
  const gate = new GatedStore(inner, (key) => holding && key.startsWith("manifest/"));
  const engine = await Engine.open(gate, eager);
  const seed = new WriteBatch();
  for (let i = 0; i < 50; i++) seed.put(`s/${String(i).padStart(3, "0")}`, enc("seed"));
  await engine.commit(seed);
  await engine.checkpoint();
  holding = true;
  return { inner, gate, engine };
}

/** Releases the one held manifest put. */
async function releaseHeld(gate: GatedStore): Promise<void> {
  expect(gate.held).toHaveLength(1);
  gate.release(gate.held[0]!.key);
}

describe("Engine.checkpoint() under a steady stream of commits", () => {
  it("returns after the checkpoint that covers the call, not after the automatic ones started behind it", async () => {
    const { inner, gate, engine } = await openGated();
    // Checkpoint A covers c1 and is held at its manifest put.
    await engine.commit(new WriteBatch().put("c/1", enc("1")));
    const c1 = await newestWal(inner);
    await gate.waitHeld(1);
    const call = engine.checkpoint();
    // Made after the call: a checkpoint of it is not the caller's to wait for.
    await engine.commit(new WriteBatch().put("c/2", enc("2")));
    await releaseHeld(gate);
    // A published; B (cut after the call, covering c2) starts at once and is held at its manifest put.
    await gate.waitHeld(1);
    expect(await settlesWithinTurns(call)).toBe(true);
    await call;
    // A's manifest covers c1, and its deletions ended: no WAL object it covers is left.
    const published = await newestManifest(inner);
    expect(published.walNext).toBeGreaterThan(c1);
    for await (const o of inner.list("wal/")) {
      const seq = parseNumberedKey("", "wal", o.key)!;
      if (!published.fences.includes(seq)) expect(seq).toBeGreaterThanOrEqual(published.walNext);
    }
    // B is still held: the call did not wait for it.
    expect(gate.held).toHaveLength(1);
    await releaseHeld(gate);
    await engine.close();
  });

  it("a checkpoint already running whose cut is before the call is not enough: the call waits for one cut after it", async () => {
    const { inner, gate, engine } = await openGated();
    await engine.commit(new WriteBatch().put("c/1", enc("1")));
    await gate.waitHeld(1);
    // c2 lands after A's cut and before the call: A does not cover it.
    await engine.commit(new WriteBatch().put("c/2", enc("2")));
    const c2 = await newestWal(inner);
    const call = engine.checkpoint();
    await releaseHeld(gate);
    await gate.waitHeld(1);
    expect(await settlesWithinTurns(call, 50)).toBe(false);
    // B covers c2: the call returns once B published, and its manifest covers c2.
    await releaseHeld(gate);
    await call;
    expect((await newestManifest(inner)).walNext).toBeGreaterThan(c2);
    await engine.close();
  });

  it("keeps a bound over many rounds: each call returns after at most the checkpoint running and one more", async () => {
    const { inner, gate, engine } = await openGated();
    await engine.commit(new WriteBatch().put("k/0", enc("0")));
    await gate.waitHeld(1);
    for (let round = 1; round <= 8; round++) {
      // Before the call: the running checkpoint does not cover this commit.
      await engine.commit(new WriteBatch().put(`k/${round}`, enc(String(round))));
      const before = await newestWal(inner);
      const call = engine.checkpoint();
      let released = 0;
      while (!(await settlesWithinTurns(call, 50))) {
        // Commits keep coming, so every publish starts another automatic checkpoint.
        await engine.commit(new WriteBatch().put(`k/${round}/${released}`, enc("x")));
        await gate.waitHeld(1);
        await releaseHeld(gate);
        released++;
        expect(released).toBeLessThanOrEqual(2);
      }
      await call;
      expect((await newestManifest(inner)).walNext).toBeGreaterThan(before);
      await gate.waitHeld(1);
    }
    await releaseHeld(gate);
    await engine.close();
  });
});
