/**
 * @module Manifests read while `Object.prototype` holds a field of their
 * names: a setter (the decoder's assignment called it, the manifest lost
 * the field and the store read as corrupted), a read-only field, or a
 * plain value (an absent `opener` or `lastSegment`, or a version-1
 * segment's absent `run`, read the prototype's). Each decodes to its own
 * fields, the setter called with none, and an engine reopens over them.
 */
import { describe, expect, it } from "vitest";
import { pack } from "msgpackr";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { decodeManifest, encodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { whileDefined, withPolluted } from "../support/polluted-prototype.js";

const enc = (s: string) => new TextEncoder().encode(s);

const MANIFEST: Manifest = {
  id: 3,
  epoch: 2,
  walNext: 9,
  segments: [{ name: "seg/1", bytes: 10, entries: 2, firstKey: "a", lastKey: "b", run: 3 }],
  fences: [4],
  createdAt: 5,
};

const FIELDS = ["id", "epoch", "walNext", "segments", "fences", "createdAt", "name", "bytes", "entries", "firstKey", "lastKey", "run"];

/** A version-1 manifest's bytes: its segments hold no `run`. */
function versionOne(m: Manifest): Uint8Array {
  const body = pack({ ...m, segments: m.segments.map(({ run: _run, ...s }) => s) });
  const head = Buffer.alloc(12);
  head.writeUInt32LE(0x464d5154, 0);
  head.writeUInt16LE(1, 4);
  head.writeUInt32LE(crc32(body), 8);
  return Buffer.concat([head, body]);
}

describe("a manifest read under a polluted Object.prototype", () => {
  it("decodes under setters named as every field, calling none", async () => {
    const bytes = encodeManifest(MANIFEST);
    const taken: unknown[] = [];
    const setter = { get: () => undefined, set: (v: unknown) => taken.push(v) };
    await whileDefined(Object.fromEntries(FIELDS.map((f) => [f, setter])), async () => {
      const m = decodeManifest("manifest/3", bytes, 3);
      for (const f of ["id", "epoch", "walNext", "segments", "fences", "createdAt"]) expect(Object.hasOwn(m, f), f).toBe(true);
      expect(Object.hasOwn(m.segments[0]!, "run")).toBe(true);
      expect({ ...m, segments: m.segments.map((s) => ({ ...s })) }).toMatchObject(MANIFEST);
    });
    expect(taken).toEqual([]);
  });

  it("decodes under read-only fields of those names", async () => {
    const bytes = encodeManifest(MANIFEST);
    await whileDefined({ id: { value: 0, writable: false }, run: { value: 7, writable: false } }, async () => {
      const m = decodeManifest("manifest/3", bytes, 3);
      expect(m.id).toBe(3);
      expect(m.segments[0]!.run).toBe(3);
    });
  });

  it("reads an absent opener, last segment and version-1 run as absent, not as the prototype's", () => {
    const read = withPolluted({ opener: "planted", lastSegment: 99, run: 5 }, () => {
      const m = decodeManifest("manifest/3", versionOne(MANIFEST), 3);
      return { opener: m.opener, lastSegment: m.lastSegment, run: m.segments[0]!.run };
    });
    expect(read).toEqual({ opener: undefined, lastSegment: undefined, run: 0 });
  });

  it("reopens an engine over its checkpoints under setters named as manifest fields", async () => {
    const store = new MemoryStore();
    const first = await Engine.open(store, { checkpointWalObjects: 0 });
    await first.commit(new WriteBatch().put("k/1", enc("v1")));
    await first.checkpoint();
    await first.close();
    const setter = { get: () => undefined, set: () => {} };
    await whileDefined(Object.fromEntries(FIELDS.map((f) => [f, setter])), async () => {
      const e = await Engine.open(store, { checkpointWalObjects: 0 });
      expect(new TextDecoder().decode((await e.get("k/1"))!)).toBe("v1");
      await e.close();
    });
  });
});
