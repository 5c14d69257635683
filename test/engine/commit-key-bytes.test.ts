/**
 * @module A commit encodes each key once: the WAL writes its UTF-8 bytes
 * (one native write for keys under 128 units, moved one byte on when their
 * bytes need a two-byte length) and tells where (`EncodedKeys`), and the
 * changed-keys map copies them from there (`setBytes`). Keys of every UTF-8
 * width must come back the same from the WAL, from the map, and from an
 * incremental checkpoint written from that map.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { ChangedKeys } from "../../runtime/engine/changed-keys.js";
import { commitOwned } from "../../runtime/engine/engine.js";
import { decodeWal, EncodedKeys, WalBuilder } from "../../runtime/engine/wal-format.js";
import type { BatchOp } from "../../runtime/engine/write-batch.js";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Keys of every UTF-8 width around the one-byte length's edge (127 bytes) and the native write's (128 units). */
const KEYS = [
  "",
  "n/workflow-steps",
  "u/workflow/history/workflow-steps/01M950N3NSDN6GHAYGHEM6XDMR/0000000009",
  "a".repeat(127),
  "a".repeat(128),
  "é".repeat(63),
  "é".repeat(64),
  "é".repeat(70),
  "\u20ac".repeat(42),
  "\u20ac".repeat(43),
  "\u20ac".repeat(127),
  "\u{1F600}".repeat(31),
  "\u{1F600}".repeat(32),
  "\u{1F600}".repeat(63),
  "é".repeat(100),
  `k/${"é".repeat(40)}/\u20ac/\u{1F600}/z`,
];

describe("the keys a WAL batch was encoded with", () => {
  it("name each key's UTF-8 bytes in the object, for keys of every width, and the batch decodes as given", () => {
    const ops: BatchOp[] = KEYS.map((key, i) => (i % 3 === 0 ? { kind: "delete", key } : { kind: "put", key, value: enc(`v${i}`) }));
    const w = new WalBuilder(16);
    const keys = new EncodedKeys();
    // A first batch, so the second starts past the header and past another batch's bytes.
    w.add([{ kind: "put", key: "first", value: enc("1") }], undefined, keys);
    w.add(ops, undefined, keys);
    for (let i = 0; i < ops.length; i++) {
      const from = keys.spans[2 * i]!;
      const len = keys.spans[2 * i + 1]!;
      expect(Buffer.from(keys.bytes.subarray(from, from + len)).toString("utf8")).toBe(ops[i]!.key);
    }
    const obj = decodeWal("wal/3", w.seal(1, 3), 3);
    if (obj.kind !== "batches") throw new Error("not a batch object");
    expect(obj.batches[1]!.map((op) => [op.kind, op.key, op.kind === "put" ? dec(op.value) : null])).toEqual(
      ops.map((op) => [op.kind, op.key, op.kind === "put" ? dec(op.value) : null]),
    );
  });

  it("a key whose bytes need a two-byte length, at the very end of the buffer, is written whole or the batch throws", () => {
    for (const key of ["é".repeat(64), "\u20ac".repeat(43), "\u20ac".repeat(127)]) {
      for (let capacity = 16; capacity < 460; capacity += 17) {
        const w = new WalBuilder(capacity);
        w.add([{ kind: "put", key: "a", value: enc("1") }]);
        w.add([{ kind: "delete", key }]);
        const obj = decodeWal("wal/3", w.seal(1, 3), 3);
        expect(obj.kind === "batches" && obj.batches.map((b) => b.map((op) => op.key))).toEqual([["a"], [key]]);
      }
    }
  });
});

describe("ChangedKeys.setBytes", () => {
  it("is set of the key those bytes encode: one entry per key whichever way it came, found by get, decoded by keyAt", () => {
    const model = new Map<string, number>();
    const map = new ChangedKeys<number>();
    const { random, int } = testRandom("setBytes against set");
    // The bytes sit inside a larger buffer, as a WAL batch's keys do.
    const scratch = Buffer.alloc(4096);
    for (let i = 0; i < 4000; i++) {
      const key = `${KEYS[int(KEYS.length)]!}/${int(200)}`;
      if (random() < 0.5) map.set(key, i);
      else {
        const at = 7 + int(100);
        const len = scratch.write(key, at, "utf8");
        map.setBytes(scratch, at, len, i);
      }
      model.set(key, i);
    }
    expect(map.size).toBe(model.size);
    expect([...map.entries()]).toEqual([...model.entries()]);
    for (const [k, v] of model) expect(map.get(k)).toBe(v);
  });
});

describe("a commit's changed keys", () => {
  const manual = { checkpointWalObjects: 0, checkpointWalBytes: 0, onBackgroundError: () => {} };

  it("reach an incremental checkpoint as committed, for keys of every width, through commit and commitOwned", async () => {
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const engine = await Engine.open(store, manual);
    const base = new WriteBatch();
    for (let i = 0; i < 400; i++) {
      base.put(`base/${i}`, enc(`b${i}`));
      model.set(`base/${i}`, `b${i}`);
    }
    for (const key of KEYS) {
      base.put(`old/${key}`, enc("old"));
      model.set(`old/${key}`, "old");
    }
    await engine.commit(base);
    await engine.checkpoint();
    expect(engine.stats.compactions).toBe(1);
    // Changes to a few keys of every width: new ones, overwrites and deletes, half by each commit path.
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < KEYS.length; i++) {
        const ops: BatchOp[] = [
          { kind: "put", key: `new/${KEYS[i]!}`, value: enc(`n${round}/${i}`) },
          { kind: "put", key: `base/${i}`, value: enc(`c${round}/${i}`) },
          round === 0 ? { kind: "put", key: `old/${KEYS[i]!}`, value: enc(`o${i}`) } : { kind: "delete", key: `old/${KEYS[i]!}` },
        ];
        for (const op of ops) {
          if (op.kind === "put") model.set(op.key, dec(op.value));
          else model.delete(op.key);
        }
        if (i % 2 === 0) {
          const b = new WriteBatch();
          for (const op of ops) op.kind === "put" ? b.put(op.key, op.value) : b.delete(op.key);
          await engine.commit(b);
        } else await commitOwned(engine, ops, []);
      }
    }
    await engine.checkpoint();
    // Incremental: only the keys the commits changed were written, from the changed-keys map.
    expect(engine.stats.compactions).toBe(1);
    expect(engine.stats.checkpoints).toBe(2);
    await engine.close();
    const reopened = await Engine.open(store, manual);
    const state = new Map<string, string>();
    for (const [k, v] of reopened.scan()) state.set(k, dec(v));
    expect(state).toEqual(model);
    await reopened.close();
  });
});
