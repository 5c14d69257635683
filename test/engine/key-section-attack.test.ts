/**
 * @module Attacks on opening from key sections and on compactions reading
 * paged values by windows of blocks: keys whose UTF-8 and UTF-16 orders
 * differ, huge keys, values at the inline bounds, tombstone-only segments,
 * stores without ranged reads, store faults; every case ends in the state a
 * model holds or in `StoreCorruptedError` naming the segment.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch, withFaults, withLatency, type EngineOptions, type ObjectStore } from "taquba";
import { readU64, writeU64 } from "../../runtime/engine/byte-io.js";
import { crc32 } from "../../runtime/engine/checksum.js";
import type { Manifest } from "../../runtime/engine/manifest.js";
import { loadSegments } from "../../runtime/engine/recovery.js";
import { SegmentBuilder } from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (v: Uint8Array) => new TextDecoder().decode(v);

const paged = (extra: Partial<EngineOptions> = {}): EngineOptions => ({
  pageValues: { keyPrefixes: ["j/", "\u{10000}", "\uffff"], minBytes: 64, cacheBytes: 4096 },
  checkpointWalObjects: 0,
  segmentBlockBytes: 512,
  maxSegmentBytes: 8 * 1024,
  ...extra,
});

/** Keys around the characters whose UTF-16 and UTF-8 orders disagree (U+E000..U+FFFF against U+10000 and up). */
const heads = ["j/\uffff", "j/\u{10000}", "j/\ue000", "j/\u{1f600}", "j/é", "j/a", "\uffff/", "\u{10000}/", "o/\u{10ffff}", "o/\uffff"];

/** What `engine` holds of every key ever written (`touched`), read key by key: the cache is tiny. */
async function scanOf(engine: Engine, touched: Set<string>): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const k of [...touched].sort(compareKeys)) {
    if (!engine.has(k)) continue;
    for (let p = engine.warm([k]); p !== undefined; p = engine.warm([k])) await p;
    out.push([k, dec(engine.get(k)!)]);
  }
  return out;
}

const sorted = (m: Map<string, string>) => [...m.entries()].sort((a, b) => compareKeys(a[0], b[0]));

/** Value lengths at and around the bounds: key tail, inline (64), paged (minBytes 64), large. */
function valueFor(r: ReturnType<typeof testRandom>, key: string): string {
  const len = [0, 1, 63, 64, 65, 200, 3000][r.int(7)]!;
  if (len === 1 && r.int(2) === 0) return key.slice(-1).charCodeAt(0) < 0x80 ? key.slice(-1) : "z";
  return "v".repeat(len);
}

/** Writes `key` into `b` and into the model of what the store holds; `value` undefined deletes it. */
function write(b: WriteBatch, model: Map<string, string>, touched: Set<string>, key: string, value: string | undefined): void {
  touched.add(key);
  if (value === undefined) {
    b.delete(key);
    model.delete(key);
  } else {
    b.put(key, enc(value));
    model.set(key, value);
  }
}

/** A batch of `n` writes of keys drawn by `keyOf`: one in six a delete, the others of values at the bounds (`valueFor`), each recorded in the model. */
function randomBatch(r: ReturnType<typeof testRandom>, n: number, keyOf: () => string, model: Map<string, string>, touched: Set<string>): WriteBatch {
  const b = new WriteBatch();
  for (let i = 0; i < n; i++) {
    const key = keyOf();
    write(b, model, touched, key, r.int(6) === 0 ? undefined : valueFor(r, key));
  }
  return b;
}

describe("key sections and windowed compactions against keys, values and stores at the edges", () => {
  it("keys whose UTF-16 and UTF-8 orders differ: reopen from key sections, compactions and readers agree with a model", {
    timeout: HEAVY_TEST_MS,
  }, async () => {
    const r = testRandom("key section utf orders");
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const touched = new Set<string>();
    for (let round = 0; round < 8; round++) {
      const engine = await Engine.open(store, paged({ maxSegmentRuns: round % 3 === 0 ? 1 : 4 }));
      expect(await scanOf(engine, touched)).toEqual(sorted(model));
      for (let c = 0; c < 3; c++) {
        await engine.commit(
          randomBatch(r, 150, () => `${heads[r.int(heads.length)]}${r.int(300)}${["", "\uffff", "\u{10000}", "é"][r.int(4)]}`, model, touched),
        );
        await engine.checkpoint();
      }
      expect(await scanOf(engine, touched)).toEqual(sorted(model));
      await engine.close();
      const reader = await EngineReader.open(store);
      expect([...reader.scan()].map(([k, v]) => [k, dec(v)])).toEqual(sorted(model));
    }
  });

  /** A store written through the engine: several runs of paged, held and deleted keys; the model of it. */
  async function filled(name: string): Promise<{ store: MemoryStore; model: Map<string, string>; touched: Set<string> }> {
    const r = testRandom(name);
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const touched = new Set<string>();
    const engine = await Engine.open(store, paged({ maxSegmentRuns: 8 }));
    for (let c = 0; c < 4; c++) {
      await engine.commit(randomBatch(r, 200, () => `${heads[r.int(heads.length)]}${r.int(400)}`, model, touched));
      await engine.checkpoint();
    }
    await engine.close();
    return { store, model, touched };
  }

  /** Opens `store` paged, checks it against the model, compacts it into one run and checks again. */
  async function openAndCompact(store: ObjectStore, model: Map<string, string>, touched: Set<string>, extra: Partial<EngineOptions> = {}) {
    const engine = await Engine.open(store, paged({ maxSegmentRuns: 1, ...extra }));
    try {
      expect(await scanOf(engine, touched)).toEqual(sorted(model));
      await engine.commit(new WriteBatch().put("x/late", enc("late")));
      await engine.checkpoint();
      model.set("x/late", "late");
      touched.add("x/late");
      expect(await scanOf(engine, touched)).toEqual(sorted(model));
    } finally {
      await engine.close();
    }
  }

  it("a store without ranged reads opens from key sections and compacts to what the model holds", async () => {
    const { store, model, touched } = await filled("key section no getRange");
    const plain: ObjectStore = {
      get: (k) => store.get(k),
      put: (k, b, o) => store.put(k, b, o),
      delete: (k) => store.delete(k),
      list: (p, o) => store.list(p, o),
    };
    await openAndCompact(plain, model, touched);
    await openAndCompact(store, model, touched);
  });

  it("a store without ranged reads: open and a compaction read each segment once, not once per window (each read is the whole object)", async () => {
    const store = new MemoryStore();
    let segmentGets = 0;
    const plain: ObjectStore = {
      get: (k) => {
        if (k.startsWith("seg/")) segmentGets++;
        return store.get(k);
      },
      put: (k, b, o) => store.put(k, b, o),
      delete: (k) => store.delete(k),
      list: (p, o) => store.list(p, o),
    };
    const opts = paged({ maxSegmentRuns: 1, maxSegmentBytes: 8 * 1024 * 1024, segmentBlockBytes: 64 * 1024 });
    const engine = await Engine.open(plain, opts);
    const b = new WriteBatch();
    // About 7 MiB of paged values: one segment of seven compaction windows.
    for (let i = 0; i < 7000; i++) b.put(`j/${String(i).padStart(5, "0")}`, new Uint8Array(1000).fill(i & 0xff));
    await engine.commit(b);
    await engine.checkpoint();
    await engine.close();
    let segments = 0;
    for await (const _ of store.list("seg/")) segments++;
    expect(segments).toBe(1);
    segmentGets = 0;
    const reopened = await Engine.open(plain, opts);
    expect(segmentGets).toBe(1);
    segmentGets = 0;
    await reopened.commit(new WriteBatch().put("o/late", enc("late")));
    await reopened.checkpoint();
    expect(segmentGets).toBe(1);
    for (const i of [0, 3500, 6999]) {
      const k = `j/${String(i).padStart(5, "0")}`;
      for (let p = reopened.warm([k]); p !== undefined; p = reopened.warm([k])) await p;
      expect(reopened.get(k)).toEqual(new Uint8Array(1000).fill(i & 0xff));
    }
    await reopened.close();
  });

  it("a store without ranged reads: open reads each segment once even when its key section is longer than open guessed", async () => {
    const store = new MemoryStore();
    let segmentGets = 0;
    const plain: ObjectStore = {
      get: (k) => {
        if (k.startsWith("seg/")) segmentGets++;
        return store.get(k);
      },
      put: (k, b, o) => store.put(k, b, o),
      delete: (k) => store.delete(k),
      list: (p, o) => store.list(p, o),
    };
    const opts = paged({ maxSegmentBytes: 8 * 1024 * 1024, segmentBlockBytes: 64 * 1024 });
    const engine = await Engine.open(plain, opts);
    const b = new WriteBatch();
    // Values of 64 B held in memory: the section copies them, about 75 B per entry against the 8 open guesses.
    for (let i = 0; i < 20000; i++) b.put(`o/${String(i).padStart(5, "0")}`, new Uint8Array(64).fill(i & 0xff));
    await engine.commit(b);
    await engine.checkpoint();
    await engine.close();
    segmentGets = 0;
    const reopened = await Engine.open(plain, opts);
    expect(segmentGets).toBe(1);
    expect(reopened.get("o/12345")).toEqual(new Uint8Array(64).fill(12345 & 0xff));
    await reopened.close();
  });

  it("reads failing at random during open and windowed compactions: retried to the model's state", { timeout: HEAVY_TEST_MS }, async () => {
    const { store, model, touched } = await filled("key section faults");
    const faulty = withFaults(store, { failureRate: 0.3, seed: 7, ops: ["get"] });
    await openAndCompact(faulty, model, touched, { retry: { attempts: 30, baseDelayMs: 0, maxDelayMs: 0 } });
    expect(faulty.injected).toBeGreaterThan(5);
    await openAndCompact(store, model, touched);
  });

  // Seconds of CPU in this process: past vitest's default 30 s on two cores at a load of 36.
  it("huge keys (up to 2 MiB, long shared prefixes, multi-byte) with values at the inline bounds reopen and compact to the model's state", {
    timeout: HEAVY_TEST_MS,
  }, async () => {
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const touched = new Set<string>();
    const big = "é".repeat(150_000);
    const keys = [
      `j/${big}`,
      `j/${big}a`,
      `j/${big}\uffff`,
      `j/${big}\u{10000}`,
      `j/${"z".repeat(2 * 1024 * 1024)}`,
      `o/${"\u{10000}".repeat(50_000)}`,
      `j/${"q".repeat(70_000)}x`,
    ];
    const lens = [0, 1, 64, 65, 2000];
    const engine = await Engine.open(store, paged({ maxSegmentRuns: 8 }));
    for (let round = 0; round < 3; round++) {
      const b = new WriteBatch();
      for (const [i, k] of keys.entries()) write(b, model, touched, k, (i + round) % 6 === 5 ? undefined : "w".repeat(lens[(i + round) % lens.length]!));
      await engine.commit(b);
      await engine.checkpoint();
    }
    await engine.close();
    await openAndCompact(store, model, touched);
    await openAndCompact(store, model, touched);
    const reader = await EngineReader.open(store);
    expect([...reader.scan()].map(([k, v]) => [k, dec(v)])).toEqual(sorted(model));
  });

  it("segments of one entry and of tombstones only reopen from their key sections and compact to the model's state", async () => {
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const touched = new Set<string>();
    const engine = await Engine.open(store, paged({ maxSegmentRuns: 8 }));
    const keys = ["j/\u{10000}", "j/\uffff", "j/a", "o/1", "\uffff/x"];
    const b = new WriteBatch();
    for (const k of keys) write(b, model, touched, k, "v".repeat(100));
    await engine.commit(b);
    await engine.checkpoint();
    // A run of tombstones only, then a run of one entry, then one tombstone.
    const del = new WriteBatch();
    for (const k of keys.slice(0, 3)) write(del, model, touched, k, undefined);
    await engine.commit(del);
    await engine.checkpoint();
    const one = new WriteBatch();
    write(one, model, touched, "j/\uffff", "w".repeat(64));
    await engine.commit(one);
    await engine.checkpoint();
    const tombstone = new WriteBatch();
    write(tombstone, model, touched, "o/1", undefined);
    await engine.commit(tombstone);
    await engine.checkpoint();
    await engine.close();
    const reopened = await Engine.open(store, paged({ maxSegmentRuns: 8 }));
    expect(await scanOf(reopened, touched)).toEqual(sorted(model));
    await reopened.close();
    await openAndCompact(store, model, touched);
  });

  it("reads that complete out of order (jittered latency) during open and windowed compactions: the model's state", async () => {
    const { store, model, touched } = await filled("key section latency");
    // Tails are fetched eight ahead: with jitter they land in any order.
    await openAndCompact(withLatency(store, { ms: 0, jitterMs: 3, seed: 5 }), model, touched);
    await openAndCompact(store, model, touched);
  });

  it("a compaction whose window reads keep failing publishes nothing; once reads work again the next one compacts to the model's state", async () => {
    const { store, model, touched } = await filled("key section compaction outage");
    const faulty = withFaults(store, { failureRate: 0, seed: 3, ops: ["get"] });
    const engine = await Engine.open(faulty, paged({ maxSegmentRuns: 1, retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 0 } }));
    const manifests = async () => {
      const out: string[] = [];
      for await (const o of store.list("manifest/")) out.push(o.key);
      return out;
    };
    const before = await manifests();
    await engine.commit(new WriteBatch().put("x/late", enc("late")));
    model.set("x/late", "late");
    touched.add("x/late");
    faulty.failureRate = 1;
    await expect(engine.checkpoint()).rejects.toThrow(/get/);
    expect(await manifests()).toEqual(before);
    faulty.failureRate = 0;
    await engine.checkpoint();
    expect(await manifests()).not.toEqual(before);
    expect(await scanOf(engine, touched)).toEqual(sorted(model));
    await engine.close();
    await openAndCompact(store, model, touched);
  });

  it("a paging policy changed between opens (prefixes, sizes at the inline bound, none) reopens and compacts to the model's state", async () => {
    const { store, model, touched } = await filled("key section policy changes");
    const policies: EngineOptions["pageValues"][] = [
      { keyPrefixes: ["o/"], minBytes: 65, cacheBytes: 4096 },
      { keyPrefixes: ["j/", "o/", "\uffff", "\u{10000}"], minBytes: 0, cacheBytes: 0 },
      { keyPrefixes: ["j/\u{10000}"], minBytes: 64, cacheBytes: 4096 },
      undefined,
      { keyPrefixes: ["j/"], minBytes: 66, cacheBytes: 4096 },
    ];
    for (const pageValues of policies) await openAndCompact(store, model, touched, { pageValues });
  });

  it("a segment of no entries, with and without its key section, loads as nothing beside a segment of one entry", async () => {
    for (const keySection of [true, false]) {
      const store = new MemoryStore();
      const empty = new SegmentBuilder(512, 4096, { keySection }).finish();
      const one = new SegmentBuilder(512, 4096, { keySection });
      one.add("j/\u{10000}", new Uint8Array(100).fill(5));
      const oneBytes = one.finish();
      await store.put("seg/1-1", empty);
      await store.put("seg/1-2", oneBytes);
      const manifest: Manifest = {
        id: 1,
        epoch: 1,
        walNext: 1,
        fences: [],
        createdAt: 0,
        segments: [
          { name: "seg/1-1", bytes: empty.length, entries: 0, firstKey: "", lastKey: "", run: 1 },
          { name: "seg/1-2", bytes: oneBytes.length, entries: 1, firstKey: "j/\u{10000}", lastKey: "j/\u{10000}", run: 2 },
        ],
      };
      for (const policy of [{ keyPrefixes: ["j/"], minBytes: 64 }, { keyPrefixes: ["o/"], minBytes: 64 }, undefined]) {
        const state = (await loadSegments({ store, prefix: "", retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } }, manifest, undefined, policy))!;
        state.stopIdleMerges();
        const got = [...state.scan()];
        expect(got.map(([k]) => k)).toEqual(["j/\u{10000}"]);
        // Paged under j/ (the state holds its run), held otherwise.
        if (policy?.keyPrefixes[0] === "j/") expect(got[0]![1]).toBe(2);
        else expect(typeof got[0]![1]).not.toBe("number");
      }
    }
  });

  it("random edits of the key section under a recomputed checksum: every refusal is StoreCorruptedError naming the segment, nothing else is thrown", async () => {
    const r = testRandom("key section random edits");
    const keys = new Set<string>();
    while (keys.size < 300) keys.add(`${["j/", "j/\uffff", "j/\u{10000}", "o/é"][r.int(4)]}${r.int(100000)}`);
    const entries = [...keys].sort(compareKeys).map((k): [string, Uint8Array | undefined] => {
      return [k, r.int(5) === 0 ? undefined : new Uint8Array([0, 1, 3, 64, 65, 200][r.int(6)]!).fill(97 + r.int(3))];
    });
    const builder = new SegmentBuilder(300, 4096);
    for (const [k, v] of entries) builder.add(k, v);
    const seg = builder.finish();
    const footer = seg.length - 44;
    const slotAt = readU64(seg, footer);
    const indexAt = readU64(seg, footer + 12);
    const slot = seg.subarray(slotAt, indexAt);
    /** `seg` with its filter slot replaced by `edited`, offsets and the tail checksum made right again. */
    const reseal = (edited: Buffer) => {
      const out = Buffer.concat([seg.subarray(0, slotAt), edited, seg.subarray(indexAt)]);
      const f = out.length - 44;
      out.writeUInt32LE(edited.length, f + 8);
      writeU64(out, f + 12, slotAt + edited.length);
      out.writeUInt32LE(crc32(out.subarray(slotAt, f + 40)), f + 40);
      return out;
    };
    const others: string[] = [];
    let refused = 0;
    for (let t = 0; t < 1500; t++) {
      const s = Buffer.from(slot);
      const at = 1 + r.int(s.length - 1);
      const edit = r.int(4);
      const edited =
        edit === 0
          ? (s.fill(r.int(256), at, at + 1), s)
          : edit === 1
            ? s.subarray(0, at)
            : edit === 2
              ? Buffer.concat([s.subarray(0, at), Buffer.from([r.int(256)]), s.subarray(at)])
              : Buffer.concat([s.subarray(0, at), s.subarray(at + 1 + r.int(4))]);
      const bad = reseal(edited);
      const store = new MemoryStore();
      await store.put("seg/1-1", bad);
      const manifest: Manifest = {
        id: 1,
        epoch: 1,
        walNext: 1,
        fences: [],
        createdAt: 0,
        segments: [{ name: "seg/1-1", bytes: bad.length, entries: entries.length, firstKey: entries[0]![0], lastKey: entries.at(-1)![0], run: 1 }],
      };
      try {
        const state = await loadSegments({ store, prefix: "", retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } }, manifest, undefined, {
          keyPrefixes: ["j/", "o/"],
          minBytes: 64,
        });
        state?.stopIdleMerges();
      } catch (err) {
        if (err instanceof StoreCorruptedError && err.message.includes('"seg/1-1"')) refused++;
        else others.push(`edit ${edit} at ${at}: ${String(err)}`);
      }
    }
    expect(others).toEqual([]);
    expect(refused).toBeGreaterThan(1000);
  });

  it("objects handed to the store are plain buffers, never resizable ones (fetch refuses them as a body), at segment and WAL sizes past 16 MiB", async () => {
    const inner = new MemoryStore();
    // A store that sends what it is given as a request body, as one over fetch does (no request is made).
    const fetchLike: ObjectStore = {
      get: (k) => inner.get(k),
      getRange: (k, o, n) => inner.getRange(k, o, n),
      put: (k, body, o) => {
        new Request(`http://store.invalid/${encodeURIComponent(k)}`, { method: "PUT", body });
        return inner.put(k, body, o);
      },
      delete: (k) => inner.delete(k),
      list: (p, o) => inner.list(p, o),
    };
    const engine = await Engine.open(fetchLike, { maxSegmentBytes: 32 * 1024 * 1024, maxWalBytes: 64 * 1024 * 1024, checkpointWalObjects: 0 });
    // A WAL object of 17 MiB: the next one is built with room for as much.
    await engine.commit(new WriteBatch().put("a/big", new Uint8Array(17 * 1024 * 1024).fill(1)));
    await engine.commit(new WriteBatch().put("a/small", enc("s")));
    await engine.checkpoint();
    await engine.close();
    const reopened = await Engine.open(inner);
    expect(dec(reopened.get("a/small")!)).toBe("s");
    expect(reopened.get("a/big")!.byteLength).toBe(17 * 1024 * 1024);
    await reopened.close();
  });
});
