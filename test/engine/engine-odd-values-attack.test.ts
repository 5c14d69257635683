/**
 * @module Values whose bytes are odd to read, committed to an engine over
 * real files: views of detached or shrunk buffers, resizable and shared
 * buffers changed after the commit returned, Buffer subclasses, empty and
 * frozen arrays, a DataView, huge keys and values past the WAL and segment
 * sizes, 200,000 ops in one batch. Each must be refused with a
 * `ValidationError` (nothing applied, the engine goes on) or committed so
 * that checkpoints keep working and a reopen decodes what the engine holds:
 * never a WAL object or segment no reopen can decode.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, LocalStore, ValidationError, WriteBatch, type EngineOptions } from "taquba";
import { HEAVY_TEST_MS } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-odd-values-");

/** Every key and its bytes as hex, in key order (read through the buffer: iterating a view of a detached buffer throws). */
function snapshot(engine: Engine): [string, string][] {
  return [...engine.scan()].map(([k, v]) => [k, hex(v)]);
}

const hex = (v: Uint8Array) => (v.byteLength === 0 ? "" : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex"));

const KEYS = ["k/a", "k/b", "k/c", "k/odd"];

/** Reads every value of `KEYS` into memory (a scan of a paging engine needs them warm). */
async function warmAll(engine: Engine, keys = KEYS): Promise<void> {
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
}

/** `n` bytes 1..n over a buffer of its own (a loop: `Uint8Array.from` of a mapped length takes a second for 8 MiB). */
function bytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i + 1) & 0xff;
  return out;
}

/** Detaches `buf` (as a transfer to a worker does): every view of it then reads as empty. */
function detach(buf: ArrayBufferLike): void {
  structuredClone(buf, { transfer: [buf as ArrayBuffer] });
}

class OwnBuffer extends Buffer {}

/** An `ArrayBuffer` that can be resized (the library types here predate ES2024's). */
interface Resizable extends ArrayBuffer {
  resize(byteLength: number): void;
}

/** A resizable `ArrayBuffer` of `n` bytes that can grow to `max`. */
const resizable = (n: number, max: number) =>
  new (ArrayBuffer as unknown as new (n: number, opts: { maxByteLength: number }) => Resizable)(n, { maxByteLength: max });

/** Options under which values reach every writer: the WAL, segments of a few bytes, pages by block, the value arena. */
const OPTIONS: [string, EngineOptions][] = [
  ["default options", {}],
  ["every value paged by block, small segments", { pageValues: { keyPrefixes: [""], minBytes: 0, cacheBytes: 0 }, segmentBlockBytes: 16, maxSegmentBytes: 64 }],
];

describe("values whose bytes are gone when committed", () => {
  const cases: [string, () => Uint8Array][] = [
    [
      "a view of a detached ArrayBuffer",
      () => {
        const v = bytes(8);
        detach(v.buffer);
        return v;
      },
    ],
    [
      "a Buffer subclass over a detached ArrayBuffer",
      () => {
        const v = bytes(8);
        const b = Buffer.from(v.buffer, 0, 8);
        Object.setPrototypeOf(b, OwnBuffer.prototype);
        detach(v.buffer);
        return b;
      },
    ],
    [
      "a fixed-length view of a resizable ArrayBuffer shrunk under it",
      () => {
        const buf = resizable(8, 16);
        const v = new Uint8Array(buf, 0, 8);
        buf.resize(2);
        return v;
      },
    ],
  ];
  for (const [name, make] of cases) {
    it(`${name}: a ValidationError at the commit's promise, nothing applied, later commits reopen`, async () => {
      const store = new LocalStore(await tempDir());
      const engine = await Engine.open(store);
      await engine.commit(new WriteBatch().put("k/first", bytes(1)));
      let commit: Promise<void> | undefined;
      expect(() => {
        commit = engine.commit(new WriteBatch().put("k/odd", make()).put("k/beside", bytes(2)));
      }).not.toThrow();
      const err = await commit!.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(/value of "k\/odd" is a view of a detached or shrunk ArrayBuffer/);
      // Later commits in the same WAL object are acknowledged: a reopen must decode them.
      await engine.commit(new WriteBatch().put("k/later", bytes(3)));
      await engine.commit(new WriteBatch().delete("k/first"));
      const acked = snapshot(engine);
      expect(acked.map(([k]) => k)).toEqual(["k/later"]);
      await engine.close();
      const reopened = await Engine.open(store);
      expect(snapshot(reopened)).toEqual(acked);
      await reopened.close();
    });
  }
});

describe("values whose buffer changes after the commit returned (the caller broke the rule not to mutate them)", () => {
  const cases: [string, () => { value: Uint8Array; change: () => void }][] = [
    [
      "a fixed-length view of a resizable ArrayBuffer, shrunk",
      () => {
        const buf = resizable(40, 64);
        const value = new Uint8Array(buf, 0, 40).fill(7);
        return { value, change: () => buf.resize(4) };
      },
    ],
    [
      "a length-tracking view of a resizable ArrayBuffer, shrunk",
      () => {
        const buf = resizable(40, 64);
        const value = new Uint8Array(buf).fill(7);
        return { value, change: () => buf.resize(4) };
      },
    ],
    [
      "a view of a resizable ArrayBuffer, detached",
      () => {
        const buf = resizable(40, 64);
        const value = new Uint8Array(buf, 0, 40).fill(7);
        return { value, change: () => detach(buf) };
      },
    ],
    [
      "a view of a plain ArrayBuffer, detached",
      () => {
        const value = bytes(40);
        return { value, change: () => detach(value.buffer) };
      },
    ],
    [
      "a view of a SharedArrayBuffer, written",
      () => {
        const value = new Uint8Array(new SharedArrayBuffer(40)).fill(7);
        return { value, change: () => value.fill(9) };
      },
    ],
  ];
  for (const [name, make] of cases) {
    for (const [optionsName, opts] of OPTIONS) {
      it(`${name}, ${optionsName}: checkpoints go on, and a reopen holds what the engine held`, async () => {
        const store = new LocalStore(await tempDir());
        const engine = await Engine.open(store, opts);
        const { value, change } = make();
        const committed = hex(value);
        await engine.commit(new WriteBatch().put("k/a", bytes(3)).put("k/odd", value));
        change();
        // A reader opened before a checkpoint replays the WAL: the bytes the commit took.
        await engine.commit(new WriteBatch().put("k/b", bytes(5)));
        const reader = await EngineReader.open(store);
        expect(hex(reader.get("k/odd")!)).toBe(committed);
        await reader.close();
        // The checkpoints write what the engine holds now (what the array reads as); none fails for it.
        await engine.checkpoint();
        await engine.commit(new WriteBatch().put("k/c", bytes(6)));
        await engine.checkpoint();
        await warmAll(engine);
        const held = snapshot(engine);
        expect(held.map(([k]) => k)).toEqual(["k/a", "k/b", "k/c", "k/odd"]);
        await engine.close();
        const reopened = await Engine.open(store, opts);
        await warmAll(reopened);
        expect(snapshot(reopened)).toEqual(held);
        await reopened.close();
      });
    }
  }
});

describe("odd but whole values, keys and batches", () => {
  it("a DataView or a frozen plain array of numbers is refused with a ValidationError; the engine goes on", async () => {
    const engine = await Engine.open(new LocalStore(await tempDir()));
    for (const value of [new DataView(new ArrayBuffer(4)), Object.freeze([1, 2, 3])]) {
      const err = await engine.commit(new WriteBatch().put("k/odd", value as unknown as Uint8Array)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(/value of "k\/odd" is not a Uint8Array/);
    }
    await engine.commit(new WriteBatch().put("k/after", bytes(1)));
    expect(snapshot(engine)).toEqual([["k/after", "01"]]);
    await engine.close();
  });

  for (const [optionsName, opts] of OPTIONS) {
    it(`empty, frozen empty and Buffer-subclass values, a 2 MB key of multi-byte characters, a value of 8 MiB past the WAL and segment sizes, ${optionsName}`, async () => {
      const store = new LocalStore(await tempDir());
      const small: EngineOptions = { ...opts, maxWalBytes: 1024, maxSegmentBytes: 1024 };
      const engine = await Engine.open(store, small);
      const sub = Buffer.from([4, 5, 6]);
      Object.setPrototypeOf(sub, OwnBuffer.prototype);
      const hugeKey = `k/${"\u00e9\u{1F600}".repeat(300_000)}`;
      const big = bytes(8 * 1024 * 1024);
      await engine.commit(
        new WriteBatch()
          .put("k/empty", new Uint8Array(0))
          .put("k/frozen", Object.freeze(new Uint8Array(0)))
          .put("k/sub", sub),
      );
      // The subclass was copied at the commit: changing it after does not reach the engine.
      sub.fill(0);
      await engine.commit(new WriteBatch().put(hugeKey, bytes(2)).put("k/big", big));
      await engine.checkpoint();
      const keys = ["k/big", "k/empty", "k/frozen", hugeKey, "k/sub"];
      await warmAll(engine, keys);
      const held = snapshot(engine);
      expect(held.find(([k]) => k === "k/sub")?.[1]).toBe("040506");
      expect(held.find(([k]) => k === "k/empty")?.[1]).toBe("");
      expect(held.find(([k]) => k === hugeKey)?.[1]).toBe("0102");
      expect(held.find(([k]) => k === "k/big")?.[1]).toBe(hex(big));
      await engine.close();
      const reopened = await Engine.open(store, small);
      await warmAll(reopened, keys);
      expect(snapshot(reopened)).toEqual(held);
      await reopened.close();
    });
  }

  it("a batch of 200,000 ops (puts, deletes of keys put earlier in it, re-puts) is one commit a reopen replays", { timeout: HEAVY_TEST_MS }, async () => {
    const store = new LocalStore(await tempDir());
    const engine = await Engine.open(store);
    const batch = new WriteBatch();
    const n = 200_000;
    const model = new Map<string, number>();
    const values = [new Uint8Array(0), bytes(1), bytes(2), bytes(3)];
    for (let i = 0; i < n; i++) {
      const key = `k/${i % 80_000}`;
      if (i % 5 === 3) {
        batch.delete(key);
        model.delete(key);
      } else {
        const v = i % 7 === 0 ? 0 : 1 + (i % 3);
        batch.put(key, values[v]!);
        model.set(key, v);
      }
    }
    expect(batch.size).toBe(n);
    await engine.commit(batch);
    await engine.close();
    /** The engine holds exactly the model's keys, each with its value's length. */
    const check = (e: Engine) => {
      let count = 0;
      for (const [k, v] of e.scan()) {
        count++;
        if (model.get(k) !== v.byteLength) expect([k, v.byteLength]).toEqual([k, model.get(k)]);
      }
      expect(count).toBe(model.size);
    };
    const reopened = await Engine.open(store);
    check(reopened);
    await reopened.checkpoint();
    await reopened.close();
    const again = await Engine.open(store);
    check(again);
    await again.close();
  });
});
