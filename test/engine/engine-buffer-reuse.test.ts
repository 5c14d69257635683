/**
 * @module The engine's WAL and segment buffers written over for later
 * objects: only when the store was declared done with a put's body once the
 * put settles, never while a put may still read it, and never for a store
 * that keeps the arrays it was given. Also the declaration through the
 * wrappers, and `LocalStore` writing a lent body as it is.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, MemoryStore, WriteBatch, withCounting, withFaults, withLatency, type ObjectStore, type PutOptions } from "taquba";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { declarePutBodyReleased, isLentBody, lendBody, putBodyReleased } from "../../runtime/store/put-body.js";

// test: own process. Segments are written into spare buffers of a pool the whole process shares (engine/checkpoint.ts,
// two at most): two left there by an earlier file's engines with smaller segments fill it, and no buffer is reused here.

const retry = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
/** Small segments and blocks: a checkpoint writes several segments, one after the other. */
const small = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentBytes: 16 * 1024,
  segmentBlockBytes: 4 * 1024,
  maxWalBytes: 2048,
  retry,
  onBackgroundError: () => {},
};

interface Given {
  key: string;
  body: Uint8Array;
  /** The bytes when the put was made. */
  copy: Uint8Array;
  /** The bytes when the put settled. */
  settled?: Uint8Array;
}

/**
 * A store that keeps every array it was given (as a map of the caller's
 * arrays would) next to a copy of its bytes when given and when settled,
 * and stores a copy in a `MemoryStore`. Declared done with bodies or not.
 */
function keepingStore(declared: boolean): { store: ObjectStore; inner: MemoryStore; given: Given[] } {
  const inner = new MemoryStore();
  const given: Given[] = [];
  const store: ObjectStore = {
    get: (key) => inner.get(key),
    getRange: (key, offset, length) => inner.getRange(key, offset, length),
    async put(key: string, body: Uint8Array, opts?: PutOptions) {
      const g: Given = { key, body, copy: Uint8Array.from(body) };
      given.push(g);
      // Settles a turn later, so the engine runs on meanwhile.
      await new Promise((r) => setImmediate(r));
      // A copy: the MemoryStore would keep a lent body as it is, and a declared store's bodies are written over.
      const res = await inner.put(key, Uint8Array.from(body), opts);
      g.settled = Uint8Array.from(body);
      return res;
    },
    delete: (key) => inner.delete(key),
    list: (prefix, opts) => inner.list(prefix, opts),
  };
  if (declared) declarePutBodyReleased(store);
  return { store, inner, given };
}

const value = (i: number, round: number) => new TextEncoder().encode(`value ${i} of round ${round} `.repeat(20));

/**
 * Commits `rounds` rounds of 40 one-key batches and checkpoints after each:
 * the first 20 one at a time, the rest at once (several WAL objects of
 * `maxWalBytes` in flight together).
 */
async function fill(engine: Engine, rounds: number): Promise<Map<string, Uint8Array>> {
  const model = new Map<string, Uint8Array>();
  for (let round = 0; round < rounds; round++) {
    const together: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) {
      const key = `k/${String((i * 7 + round) % 120).padStart(4, "0")}`;
      const v = value(i, round);
      model.set(key, v);
      const commit = engine.commit(new WriteBatch().put(key, v));
      if (i < 20) await commit;
      else together.push(commit);
    }
    await Promise.all(together);
    await engine.checkpoint();
  }
  return model;
}

/** Whether two of `bodies` lie on the same bytes (small ones may share a buffer of Node's pool side by side). */
function overlap(bodies: readonly Uint8Array[]): boolean {
  const byBuffer = new Map<ArrayBufferLike, [number, number][]>();
  for (const b of bodies) {
    const ranges = byBuffer.get(b.buffer) ?? [];
    for (const [from, to] of ranges) if (b.byteOffset < to && from < b.byteOffset + b.byteLength) return true;
    ranges.push([b.byteOffset, b.byteOffset + b.byteLength]);
    byBuffer.set(b.buffer, ranges);
  }
  return false;
}

async function expectState(store: ObjectStore, model: Map<string, Uint8Array>): Promise<void> {
  const engine = await Engine.open(store, small);
  try {
    const got = new Map<string, Uint8Array>();
    for (const [k, v] of engine.scan()) got.set(k, Uint8Array.from(v));
    expect([...got.keys()].sort()).toEqual([...model.keys()].sort());
    for (const [k, v] of model) expect(Buffer.compare(got.get(k)!, v)).toBe(0);
  } finally {
    await engine.close();
  }
}

describe("WAL and segment buffers written over for later objects", () => {
  it("never for a store that was not declared done with bodies: every array it kept still holds what it was given", async () => {
    const { store, inner, given } = keepingStore(false);
    const engine = await Engine.open(store, small);
    const model = await fill(engine, 6);
    await engine.close();
    const wal = given.filter((g) => g.key.startsWith("wal/"));
    const segments = given.filter((g) => g.key.startsWith("seg/"));
    expect(wal.length).toBeGreaterThan(100);
    expect(segments.length).toBeGreaterThan(6);
    for (const g of given) expect(Buffer.compare(g.body, g.copy), `${g.key} changed after it was given`).toBe(0);
    expect(overlap(wal.map((g) => g.body))).toBe(false);
    expect(overlap(segments.map((g) => g.body))).toBe(false);
    await expectState(inner, model);
  });

  it("for a declared store: later objects are written into earlier ones' buffers, only once their puts settled, and the store's state is intact", async () => {
    const { store, inner, given } = keepingStore(true);
    const engine = await Engine.open(store, small);
    const model = await fill(engine, 6);
    await engine.close();
    const wal = given.filter((g) => g.key.startsWith("wal/"));
    const segments = given.filter((g) => g.key.startsWith("seg/"));
    expect(overlap(wal.map((g) => g.body))).toBe(true);
    expect(overlap(segments.map((g) => g.body))).toBe(true);
    // Written over, but never before its put settled.
    for (const g of given) if (g.settled !== undefined) expect(Buffer.compare(g.settled, g.copy), `${g.key} changed while its put ran`).toBe(0);
    await expectState(inner, model);
  });

  it("declares what the inner store declared through withCounting, withFaults, withLatency and a queue's prefixed view", () => {
    const declared = new LocalStore(path.join(tmpdir(), "never-written"));
    const { store: undeclared } = keepingStore(false);
    expect(putBodyReleased(declared)).toBe(true);
    expect(putBodyReleased(undeclared)).toBe(false);
    for (const inner of [declared, undeclared]) {
      const wrapped = [
        withCounting(inner),
        withFaults(inner, { failureRate: 0 }),
        withLatency(inner, { ms: 0 }),
        new PrefixedStore(inner, "q/"),
        withCounting(withLatency(new PrefixedStore(inner, "q/"), { ms: 0 })),
      ];
      for (const w of wrapped) expect(putBodyReleased(w)).toBe(inner === declared);
    }
  });

  it("does not declare MemoryStore, which keeps lent bodies, nor a subclass of it", () => {
    class Keeping extends MemoryStore {}
    expect(putBodyReleased(new MemoryStore())).toBe(false);
    expect(putBodyReleased(new Keeping())).toBe(false);
    for (const w of [withCounting(new MemoryStore()), new PrefixedStore(new MemoryStore(), "q/")]) expect(putBodyReleased(w)).toBe(false);
  });
});

describe("LocalStore and a lent body", () => {
  it("writes a lent body as it is and still copies one not lent", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "taquba-lent-"));
    try {
      const store = new LocalStore(dir);
      const lent = Buffer.from("lent body");
      lendBody(lent);
      expect(isLentBody(lent)).toBe(true);
      expect(isLentBody(lent.subarray(0))).toBe(false);
      await store.put("a", lent);
      expect(Buffer.from((await store.get("a"))!.body).toString()).toBe("lent body");
      // Not lent: a write over it before the put settles stays out of the object.
      const mine = Buffer.from("mine");
      const put = store.put("b", mine);
      mine[0] = 0x7a;
      await put;
      expect(Buffer.from((await store.get("b"))!.body).toString()).toBe("mine");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
