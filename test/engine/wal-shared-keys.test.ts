/**
 * @module A WAL object writes each short ASCII key as the bytes it does not
 * share with the last key of its length written whole (wal-format.ts).
 * Seeded batches of keys drawn in order from a few families, mixed with keys
 * that are never references (non-ASCII, 128 bytes and more), in builders of
 * every starting size (keys written near the buffer's end) and
 * with batches that fail part way, must decode as given; the commit's
 * encoded keys must name each key's bytes; damage in a shared length is
 * named; version 1 objects still read.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreCorruptedError, WriteBatch, withCounting } from "taquba";
import { crc32 } from "../../runtime/engine/checksum.js";
import { batchBound, decodeWal, EncodedKeys, WalBuilder } from "../../runtime/engine/wal-format.js";
import type { BatchOp } from "../../runtime/engine/write-batch.js";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Keys of a few families, ids drawn in order (as a queue draws them), and keys that never share. */
function keyMaker(random: () => number, int: (n: number) => number): () => string {
  let id = 1_700_000_000;
  const ulid = () => (id += 1 + int(3)).toString(36).toUpperCase().padStart(26, "0");
  const families = [
    () => `j/${ulid()}`,
    () => `c/workflow-steps/${ulid()}`,
    () => `u/workflow/history/workflow-steps/${ulid()}/${String(int(20)).padStart(10, "0")}`,
    () => `u/workflow/steps/workflow-steps/${ulid()}`,
    // Random bytes of two letters: a key shares more or less with its reference than the key before it did.
    () => `z/${Array.from({ length: 6 }, () => "ab"[int(2)]).join("")}`,
    () => "n/workflow-steps",
    () => "a".repeat(120 + int(16)),
    () => `k/${"é".repeat(int(70))}/${int(10)}`,
    () => `\u20ac/${ulid()}`,
    () => "",
    () => String.fromCharCode(97 + int(3)).repeat(1 + int(4)),
  ];
  return () => families[random() < 0.7 ? int(6) : int(families.length)]!();
}

/** Bytes of `ops` with every key written whole and both lengths: at least what the batch takes, often less than `batchBound`. */
function wholeSize(ops: readonly BatchOp[]): number {
  let size = 1;
  for (const op of ops) {
    const n = Buffer.byteLength(op.key);
    size += 2 + (n < 128 ? 1 : 2) + n + (op.kind === "put" ? 1 + op.value.byteLength : 0);
  }
  return size;
}

/** A value whose length cannot be read: the batch holding it throws part way, after its earlier keys were written. */
function brokenValue(): Uint8Array {
  const broken = enc("x");
  Object.defineProperty(broken, "byteLength", {
    get() {
      throw new RangeError("Array buffer allocation failed");
    },
  });
  return broken;
}

/** The UTF-8 bytes `EncodedKeys` names for op `i`: its shared head, then the bytes written in place. */
function namedBytes(keys: EncodedKeys, i: number): string {
  const head = keys.bytes.subarray(keys.heads[2 * i]!, keys.heads[2 * i]! + keys.heads[2 * i + 1]!);
  const rest = keys.bytes.subarray(keys.spans[2 * i]!, keys.spans[2 * i]! + keys.spans[2 * i + 1]!);
  return Buffer.concat([head, rest]).toString("utf8");
}

/**
 * The body of a WAL object of `batches` as the module documentation
 * describes format version 2, written plainly: each short ASCII key after
 * the bytes it shares with the last key of its length written whole.
 */
function plainBody(batches: readonly (readonly BatchOp[])[]): Buffer {
  const out: number[] = [];
  const varint = (v: number) => {
    for (; v >= 0x80; v = Math.floor(v / 0x80)) out.push((v % 0x80) | 0x80);
    out.push(v);
  };
  const refs = new Map<number, Buffer>();
  for (const ops of batches) {
    varint(ops.length);
    for (const op of ops) {
      out.push(op.kind === "put" ? 0 : 1);
      const bytes = Buffer.from(op.key, "utf8");
      const reference = bytes.length === op.key.length && bytes.length < 128;
      const ref = reference ? refs.get(bytes.length) : undefined;
      let shared = 0;
      while (ref !== undefined && shared < bytes.length && ref[shared] === bytes[shared]) shared++;
      if (reference && shared === 0) refs.set(bytes.length, bytes);
      varint(bytes.length);
      out.push(shared);
      out.push(...bytes.subarray(shared));
      if (op.kind === "put") {
        varint(op.value.byteLength);
        out.push(...op.value);
      }
    }
  }
  return Buffer.from(out);
}

/** The body of a sealed WAL object: between its header and its checksum. */
const bodyOf = (sealed: Buffer) => sealed.subarray(32, sealed.length - 4);

describe("WAL keys shared with the last key of their length", () => {
  it("decode as given, and name each key's bytes, over seeded batches, starting sizes and failed batches", () => {
    const { random, int } = testRandom("wal shared keys");
    const nextKey = keyMaker(random, int);
    for (let object = 0; object < 300; object++) {
      const w = new WalBuilder(16 + int(300));
      const keys = new EncodedKeys();
      const added: BatchOp[][] = [];
      for (let b = 0, batches = 1 + int(30); b < batches; b++) {
        const ops: BatchOp[] = [];
        for (let o = 0, n = int(9); o < n; o++) {
          const key = nextKey();
          ops.push(random() < 0.3 ? { kind: "delete", key } : { kind: "put", key, value: enc(`v${object}.${b}.${o}`) });
        }
        const fails = random() < 0.1;
        if (fails) {
          // Its keys are written before the value that throws: none of them may be named by a later key.
          const failing = [...ops, { kind: "put" as const, key: nextKey(), value: brokenValue() }, ...ops];
          expect(() => w.add(failing, batchBound(ops) * 3 + 64, keys)).toThrow(RangeError);
          continue;
        }
        // A room between what the batch takes and the bound, so that keys are written near the buffer's end.
        const room = wholeSize(ops) + (random() < 0.5 ? int(8) : int(batchBound(ops) - wholeSize(ops) + 1));
        w.add(ops, room, keys);
        for (let i = 0; i < ops.length; i++) expect(namedBytes(keys, i), `object ${object} batch ${b} op ${i}`).toBe(ops[i]!.key);
        added.push(ops);
      }
      const obj = decodeWal("wal/9", w.seal(2, 9), 9);
      if (obj.kind !== "batches") throw new Error("not a batch object");
      const show = (bs: BatchOp[][]) => bs.map((ops) => ops.map((op) => [op.kind, op.key, op.kind === "put" ? dec(op.value) : null]));
      expect(show(obj.batches), `object ${object}`).toEqual(show(added));
    }
  });

  it("writes the bytes the format describes, keys that differ in any byte of their last word included", () => {
    const { random, int } = testRandom("wal shared keys bytes");
    const nextKey = keyMaker(random, int);
    for (let object = 0; object < 100; object++) {
      const w = new WalBuilder(16 + int(300));
      const added: BatchOp[][] = [];
      for (let b = 0, batches = 1 + int(30); b < batches; b++) {
        const ops: BatchOp[] = [];
        for (let o = 0, n = int(9); o < n; o++) {
          const key = nextKey();
          ops.push(random() < 0.3 ? { kind: "delete", key } : { kind: "put", key, value: enc(`v${b}.${o}`) });
        }
        w.add(ops);
        added.push(ops);
      }
      expect(bodyOf(w.seal(2, 9)).equals(plainBody(added)), `object ${object}`).toBe(true);
    }
    // Every length under 12 and every byte a key can first differ at, after keys of other lengths (whose bytes
    // lie past the shorter keys' ends in the encoder's working copies) and keys equal to their reference.
    const w = new WalBuilder(64);
    const added: BatchOp[][] = [];
    for (let len = 1; len < 12; len++) {
      const base = "k".repeat(len);
      const ops: BatchOp[] = [
        { kind: "delete", key: "m".repeat(len + 3) },
        { kind: "delete", key: base },
      ];
      for (let at = 0; at < len; at++) {
        ops.push({ kind: "delete", key: `${base.slice(0, at)}x${base.slice(at + 1)}` });
        ops.push({ kind: "delete", key: "q".repeat(len + 1 + (at % 3)) });
      }
      ops.push({ kind: "delete", key: base });
      w.add(ops);
      added.push(ops);
    }
    expect(bodyOf(w.seal(1, 3)).equals(plainBody(added))).toBe(true);
  });

  it("writes the bytes the format describes for batches of any size, a key that is not short ASCII among them or not", () => {
    // A batch of 2-16 short ASCII keys has them written together (each from a word boundary); any other batch
    // key by key. Both must give the same bytes, whatever each key's length past a word and the NUL units in it.
    const { random, int } = testRandom("wal shared keys joined");
    const nextKey = keyMaker(random, int);
    const odd = [() => `k/${"é".repeat(1 + int(5))}`, () => "a".repeat(128 + int(4)), () => `\u20ac${"x".repeat(int(6))}`];
    const short = () => {
      const kind = int(4);
      if (kind === 0) return `z/${"\0".repeat(int(5))}${"yz"[int(2)]!.repeat(int(7))}`;
      if (kind === 1) return "q".repeat(int(12));
      let key = nextKey();
      while (key.length >= 128 || Buffer.byteLength(key) !== key.length) key = nextKey();
      return key;
    };
    for (let object = 0; object < 150; object++) {
      const w = new WalBuilder(16 + int(300));
      const keys = new EncodedKeys();
      const added: BatchOp[][] = [];
      for (let b = 0, batches = 1 + int(12); b < batches; b++) {
        const ops: BatchOp[] = [];
        for (let o = 0, n = random() < 0.8 ? 1 + int(17) : 17 + int(24); o < n; o++) {
          const key = short();
          ops.push(random() < 0.3 ? { kind: "delete", key } : { kind: "put", key, value: enc(`v${b}.${o}`) });
        }
        // Sometimes one key the joined write must refuse (not ASCII, or 128 units and more), anywhere in the batch.
        if (random() < 0.3) ops.splice(int(ops.length + 1), 0, { kind: "delete", key: odd[int(odd.length)]!() });
        w.add(ops, batchBound(ops), keys);
        for (let i = 0; i < ops.length; i++) expect(namedBytes(keys, i), `object ${object} batch ${b} op ${i}`).toBe(ops[i]!.key);
        added.push(ops);
      }
      expect(bodyOf(w.seal(2, 9)).equals(plainBody(added)), `object ${object}`).toBe(true);
    }
  });

  it("a sealed object's references do not reach the next object, and a sealed object takes no more batches", () => {
    const first = new WalBuilder(64);
    first.add([{ kind: "delete", key: "j/0000000001" }]);
    const open = new WalBuilder(64);
    open.add([{ kind: "delete", key: "j/0000000777" }]);
    first.seal(1, 3);
    expect(() => first.add([{ kind: "delete", key: "j/0000000002" }])).toThrow(/added to a sealed WAL object/);
    // The next builder takes the sealed one's working references: its first key of that length is whole.
    const next = new WalBuilder(64);
    next.add([{ kind: "delete", key: "j/0000000002" }]);
    next.add([{ kind: "delete", key: "j/0000000003" }]);
    open.add([{ kind: "delete", key: "j/0000000778" }]);
    for (const [w, seq, keys] of [
      [next, 4, ["j/0000000002", "j/0000000003"]],
      [open, 5, ["j/0000000777", "j/0000000778"]],
    ] as const) {
      const sealed = w.seal(1, seq);
      expect(sealed.readUInt8(32 + 3), "the first key shares nothing").toBe(0);
      const obj = decodeWal(`wal/${seq}`, sealed, seq);
      expect(obj.kind === "batches" && obj.batches.flat().map((o) => o.key)).toEqual(keys);
    }
  });

  it("a batch refused for its room, written past the buffer's end, leaves no reference behind", () => {
    const w = new WalBuilder(16);
    w.add([{ kind: "put", key: "j/0000000001", value: enc("1") }]);
    // A key of the same length in a batch refused for its room: a later key must not share with it.
    expect(() => w.add([{ kind: "delete", key: "j/0000000999" }], 4)).toThrow(/past the 4 reserved/);
    w.add([{ kind: "put", key: "j/0000000998", value: enc("2") }]);
    const obj = decodeWal("wal/3", w.seal(1, 3), 3);
    expect(obj.kind === "batches" && obj.batches.map((b) => b.map((o) => o.key))).toEqual([["j/0000000001"], ["j/0000000998"]]);
  });

  it("a key written near the buffer's end is its length's reference, as the reader takes it", () => {
    const w = new WalBuilder(128);
    w.add([{ kind: "delete", key: "z/aaaaaa" }]);
    // A batch that leaves 20 bytes in the buffer: the next key (12 bytes with its batch) fits, but not three
    // bytes per unit (what a write of the key straight into the buffer would need).
    const left = () => w.writer.buffer.length - (w.byteLength - 4);
    w.add([{ kind: "put", key: "pad", value: new Uint8Array(left() - 20 - 8) }], left());
    expect(left()).toBe(20);
    w.add([{ kind: "delete", key: "z/bbbbbb" }], 20);
    w.add([{ kind: "delete", key: "z/aaaaab" }]);
    const obj = decodeWal("wal/3", w.seal(1, 3), 3);
    expect(obj.kind === "batches" && obj.batches.map((b) => b.map((o) => o.key))).toEqual([["z/aaaaaa"], ["pad"], ["z/bbbbbb"], ["z/aaaaab"]]);
  });

  it("takes a step's keys at about a quarter of their bytes", () => {
    const { random, int } = testRandom("wal shared keys size");
    const nextKey = keyMaker(random, int);
    const w = new WalBuilder(1 << 16);
    let whole = 0;
    for (let b = 0; b < 200; b++) {
      const ops: BatchOp[] = [];
      for (let o = 0; o < 6; o++) {
        // The queue's and the workflow's families only.
        let key = nextKey();
        while (!/^[jcu]\//.test(key)) key = nextKey();
        ops.push({ kind: "delete", key });
        whole += key.length;
      }
      w.add(ops);
    }
    // Per key a tag, the two lengths and the bytes not shared.
    expect(w.byteLength - 36 - 200 - 1200 * 3).toBeLessThan(whole * 0.35);
    // What the checkpoint trigger counts: the object with every key whole.
    expect(w.byteLength + w.sharedKeyBytes).toBe(36 + 200 + 1200 * 3 + whole);
  });

  it("names a shared length that no key can give, and reads version 1 objects", () => {
    /** A WAL object of `version` around a body of one batch of deletes. */
    const object = (version: number, body: number[]) => {
      const buf = Buffer.alloc(32 + body.length + 4);
      buf.writeUInt32LE(0x4c575154, 0);
      buf.writeUInt16LE(version, 4);
      buf.writeUInt32LE(5, 16);
      buf.writeUInt32LE(1, 24);
      Buffer.from(body).copy(buf, 32);
      buf.writeUInt32LE(crc32(buf.subarray(0, buf.length - 4)), buf.length - 4);
      return buf;
    };
    const ab = [..."ab"].map((c) => c.charCodeAt(0));
    // Version 2: "ab" whole, then a key of 2 bytes sharing 1 ("a" + "c").
    const good = decodeWal("wal/5", object(2, [2, 1, 2, 0, ...ab, 1, 2, 1, 0x63]), 5);
    expect(good.kind === "batches" && good.batches[0]!.map((o) => o.key)).toEqual(["ab", "ac"]);
    expect(() => decodeWal("wal/5", object(2, [1, 1, 2, 1, 0x63]), 5)).toThrow(StoreCorruptedError);
    expect(() => decodeWal("wal/5", object(2, [1, 1, 2, 1, 0x63]), 5)).toThrow(/no key of that length came before it/);
    expect(() => decodeWal("wal/5", object(2, [2, 1, 2, 0, ...ab, 1, 2, 3]), 5)).toThrow(/claims to share 3 bytes/);
    // A non-ASCII key written whole is no reference: a key of its byte length sharing with it is damage.
    expect(() => decodeWal("wal/5", object(2, [2, 1, 2, 0, 0xc3, 0xa9, 1, 2, 1, 0x63]), 5)).toThrow(/no key of that length/);
    // Version 1: no shared lengths.
    const old = decodeWal("wal/5", object(1, [2, 1, 2, ...ab, 1, 2, ...ab]), 5);
    expect(old.kind === "batches" && old.batches[0]!.map((o) => o.key)).toEqual(["ab", "ab"]);
  });

  it("reach an incremental checkpoint whole: keys committed together, sharing their first bytes, then reopened from segments alone", async () => {
    const { random, int } = testRandom("wal shared keys checkpoint");
    const store = new MemoryStore();
    const manual = { checkpointWalObjects: 0, checkpointWalBytes: 0, onBackgroundError: () => {} };
    const engine = await Engine.open(store, manual);
    const model = new Map<string, string>();
    const ids = Array.from({ length: 300 }, (_, i) => (1_700_000_000 + 3 * i).toString(36).toUpperCase().padStart(26, "0"));
    await engine.commit(new WriteBatch().put("start", enc("0")));
    await engine.checkpoint();
    for (let round = 0; round < 6; round++) {
      // Commits not awaited one by one land in one WAL object, where their keys share bytes.
      const commits: Promise<void>[] = [];
      for (let c = 0; c < 40; c++) {
        const b = new WriteBatch();
        for (let o = 0; o < 6; o++) {
          const id = ids[int(ids.length)]!;
          const key = [`j/${id}`, `c/workflow-steps/${id}`, `u/workflow/steps/workflow-steps/${id}`][int(3)]!;
          const roll = random();
          // Puts of a new value, rewrites of the value the key holds, and deletes.
          if (roll < 0.4) {
            b.put(key, enc(`${round}.${c}.${o}`));
            model.set(key, `${round}.${c}.${o}`);
          } else if (roll < 0.6 && model.has(key)) b.put(key, enc(model.get(key)!));
          else {
            b.delete(key);
            model.delete(key);
          }
        }
        commits.push(engine.commit(b));
      }
      await Promise.all(commits);
    }
    await engine.checkpoint();
    expect(engine.stats.compactions).toBe(1);
    expect(engine.stats.checkpoints).toBe(2);
    await engine.close();
    model.set("start", "0");
    const reopened = await Engine.open(store, manual);
    const state = new Map<string, string>();
    for (const [k, v] of reopened.scan()) state.set(k, dec(v));
    expect(state).toEqual(model);
    await reopened.close();
  });

  it("count toward the checkpoint trigger with every key whole, not as stored", async () => {
    const store = withCounting(new MemoryStore());
    const engine = await Engine.open(store, { checkpointWalObjects: 0, checkpointWalBytes: 0, onBackgroundError: () => {} });
    store.reset();
    const commits: Promise<void>[] = [];
    let whole = 0;
    for (let i = 0; i < 200; i++) {
      const key = `u/workflow/history/workflow-steps/01M95M3SXNZDG5KKD0MS1MZ9M5/${String(i).padStart(10, "0")}`;
      commits.push(engine.commit(new WriteBatch().delete(key)));
      whole += key.length;
    }
    await Promise.all(commits);
    const { walBytes, walBytesSinceCheckpoint } = engine.stats;
    // Stored, the keys after the first take their last bytes only; counted, every key's bytes.
    expect(store.counts.bytesIn).toBeLessThan(whole / 2);
    expect(walBytesSinceCheckpoint).toBeGreaterThan(whole);
    expect(walBytes).toBe(walBytesSinceCheckpoint);
    // A checkpoint's cut covers what was counted: nothing is left due after it.
    await engine.checkpoint();
    expect(engine.stats.walBytesSinceCheckpoint).toBe(0);
    await engine.close();
  });
});
