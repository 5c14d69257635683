/**
 * @module Refusals of a manifest whose checksum holds but whose contents do
 * not (untested until now): one copied or restored under another number
 * (it claims its own), and one whose fields are missing or of the wrong
 * kind. A writer's open and a reader's refuse each with
 * StoreCorruptedError naming the manifest object, write nothing, and open
 * again once the object is put back.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch } from "taquba";
import { decodeManifest, encodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { parseNumberedKey } from "../../runtime/engine/layout.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** A store with two checkpoints: its newest manifest's key and bytes. */
async function checkpointed(): Promise<{ store: MemoryStore; key: string; bytes: Uint8Array }> {
  const store = new MemoryStore();
  const e = await Engine.open(store, { checkpointWalObjects: 0 });
  for (let c = 0; c < 2; c++) {
    await e.commit(new WriteBatch().put(`k/${c}`, enc(`v${c}`)));
    await e.checkpoint();
  }
  await e.close();
  let newest: { key: string; id: number } | undefined;
  for await (const o of store.list("manifest/")) {
    const id = parseNumberedKey("", "manifest", o.key)!;
    if (newest === undefined || id > newest.id) newest = { key: o.key, id };
  }
  return { store, key: newest!.key, bytes: (await store.get(newest!.key))!.body };
}

/** Every object key and its bytes, to check an open wrote nothing. */
async function snapshot(store: MemoryStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const o of store.list("")) out.set(o.key, Buffer.from((await store.get(o.key))!.body).toString("hex"));
  return out;
}

async function expectRefused(store: MemoryStore, key: string, detail: RegExp): Promise<void> {
  const before = await snapshot(store);
  for (const open of [async () => (await Engine.open(store)).close(), async () => (await EngineReader.open(store)).close()]) {
    const err = await open().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as Error).message).toContain(key);
    expect((err as Error).message).toMatch(detail);
  }
  expect(await snapshot(store)).toEqual(before);
}

describe("a manifest whose checksum holds but whose contents do not", () => {
  it("copied under the next number (a restore under the wrong name) is refused: it claims its own number", async () => {
    const { store, key, bytes } = await checkpointed();
    const id = parseNumberedKey("", "manifest", key)!;
    const copy = key.replace(/\d+$/, (n) => String(id + 1).padStart(n.length, "0"));
    expect(parseNumberedKey("", "manifest", copy)).toBe(id + 1);
    await store.put(copy, bytes);
    await expectRefused(store, copy, new RegExp(`manifest claims number ${id} but is stored as ${id + 1}`));
    // Removed again, the store opens with every commit.
    await store.delete(copy);
    const e = await Engine.open(store);
    expect(e.get("k/1")).toEqual(enc("v1"));
    await e.close();
  });

  it.each<[string, (m: Record<string, unknown>) => void]>([
    ["a negative epoch", (m) => void (m.epoch = -1)],
    ["no walNext", (m) => void delete m.walNext],
    ["fences that are no numbers", (m) => void (m.fences = ["3"])],
    ["a segment without a name", (m) => void delete (m.segments as Record<string, unknown>[])[0]!.name],
    ["a createdAt that is text", (m) => void (m.createdAt = "yesterday")],
  ])("with %s (under a checksum recomputed) is refused as malformed", async (_, spoil) => {
    const { store, key, bytes } = await checkpointed();
    const id = parseNumberedKey("", "manifest", key)!;
    const m = decodeManifest(key, bytes, id) as unknown as Record<string, unknown>;
    spoil(m);
    await store.put(key, encodeManifest(m as unknown as Manifest));
    await expectRefused(store, key, /manifest fields are missing or malformed/);
    await store.put(key, bytes);
    const e = await Engine.open(store);
    expect(e.get("k/0")).toEqual(enc("v0"));
    await e.close();
  });
});
