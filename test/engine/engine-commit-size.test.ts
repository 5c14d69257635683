/**
 * @module The commit size limit and commits whose WAL append fails: every
 * refusal is a rejected promise (never a throw at the call), names the
 * batch's size and the limit, changes nothing in memory or in the store,
 * and later commits go on. The limit is lowered through its internal knob:
 * committing a gigabyte would take seconds and gigabytes.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { ClosedError, Engine, MemoryStore, Queue, ValidationError, WriteBatch } from "taquba";
import { ValueArena } from "../../runtime/engine/paged-value.js";
import { MAX_BATCH_BYTES, WalBuilder, batchSizeLimit } from "../../runtime/engine/wal-format.js";

afterEach(() => {
  batchSizeLimit.maxBytes = MAX_BATCH_BYTES;
  vi.restoreAllMocks();
});

/** What the call gave: "threw" when it threw at once, else the promise's outcome. */
async function outcome(call: () => Promise<void>): Promise<unknown> {
  let p: Promise<void>;
  try {
    p = call();
  } catch (err) {
    return { threw: err };
  }
  return p.then(
    () => "resolved",
    (err: unknown) => err,
  );
}

/** One put of `key` with `n` bytes, whose encoding takes 5 + key + varint(n) + n bytes. */
const put = (key: string, n: number) => new WriteBatch().put(key, new Uint8Array(n).fill(7));

describe("Engine.commit size limit", () => {
  it("refuses a batch past the limit with its size and the limit, applies nothing, and later commits go on", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store);
    await engine.commit(put("before", 10));
    const walPuts = engine.stats.walPuts;
    // "k" and 100 bytes: 1 (op count) + 1 (tag) + 1 (key length) + 1 (shared length) + 1 (key) + 1 (value length) + 100 = 106.
    batchSizeLimit.maxBytes = 105;
    const err = await outcome(() => engine.commit(put("k", 100)));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain("106 bytes");
    expect((err as Error).message).toContain("limit of 105 bytes");
    expect((err as Error).message).toMatch(/Split it into smaller batches/);
    expect(engine.get("k")).toBeUndefined();
    await engine.flush();
    expect(engine.stats.walPuts).toBe(walPuts);
    // Exactly at the limit is accepted.
    batchSizeLimit.maxBytes = 106;
    await engine.commit(put("k", 100));
    expect(engine.get("k")?.byteLength).toBe(100);
    await engine.close();
    const reopened = await Engine.open(store);
    expect(reopened.get("before")?.byteLength).toBe(10);
    expect(reopened.get("k")?.byteLength).toBe(100);
    await reopened.close();
  });

  it("counts UTF-8 bytes of keys exactly when the quick bound passes the limit", async () => {
    const engine = await Engine.open(new MemoryStore());
    // Ten ASCII keys of 20 units: the bound counts 60 bytes each, the encoding 20.
    const batch = new WriteBatch();
    for (let i = 0; i < 10; i++) batch.put(`${i}`.padStart(20, "k"), new Uint8Array(1));
    // 1 + 10 * (1 + 1 + 1 + 20 + 1 + 1) = 251 (a shared length per key, counted as if none were shared).
    batchSizeLimit.maxBytes = 251;
    await engine.commit(batch);
    batchSizeLimit.maxBytes = 250;
    const err = await outcome(() => engine.commit(batch));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain("251 bytes");
    // Three bytes per unit: "é" is two.
    const wide = new WriteBatch().put("é".repeat(50), new Uint8Array(0));
    batchSizeLimit.maxBytes = 1 + 1 + 1 + 1 + 100 + 1;
    await engine.commit(wide);
    await engine.close();
  });

  it("a WAL append that throws rejects the commit instead of throwing, and leaves nothing behind", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store);
    await engine.commit(put("before", 1));
    const walPuts = engine.stats.walPuts;
    // What an encoder buffer past its largest size does.
    const add = vi.spyOn(WalBuilder.prototype, "add").mockImplementationOnce(() => {
      throw new RangeError("Array buffer allocation failed");
    });
    const err = await outcome(() => engine.commit(put("k", 3)));
    expect(add).toHaveBeenCalledTimes(1);
    expect(err).toBeInstanceOf(RangeError);
    expect(engine.get("k")).toBeUndefined();
    await engine.flush();
    // No WAL object was opened for the refused batch alone and stored empty.
    expect(engine.stats.walPuts).toBe(walPuts);
    await engine.commit(put("after", 2));
    await engine.close();
    const reopened = await Engine.open(store);
    expect(reopened.get("k")).toBeUndefined();
    expect(reopened.get("after")?.byteLength).toBe(2);
    await reopened.close();
  });
});

describe("a queue payload past the commit size limit", () => {
  it("enqueue rejects with the limit's error, nothing is enqueued, and the queue goes on", async () => {
    const store = new MemoryStore();
    // Not offloaded: the payload goes into the engine's commit.
    const queue = await Queue.open(store, "big", { payloadOffloadBytes: null });
    batchSizeLimit.maxBytes = 64 * 1024;
    const err = await outcome(() => queue.enqueue("jobs", new Uint8Array(100 * 1024)).then(() => undefined));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/past the limit of 65536 bytes per commit/);
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0 });
    await queue.enqueue("jobs", new Uint8Array(10));
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 1 });
    await queue.close();
    batchSizeLimit.maxBytes = MAX_BATCH_BYTES;
    const reopened = await Queue.open(store, "big", { payloadOffloadBytes: null });
    expect(await reopened.view().stats("jobs")).toMatchObject({ pending: 1 });
    await reopened.close();
  });
});

describe("a batch memory cannot take after the WAL took it", () => {
  it("stops the engine with the cause, serves no half of the batch afterwards, and a reopen has the batch whole or not at all", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { pageValues: { keyPrefixes: ["j/"], minBytes: 1 } });
    await engine.commit(put("before", 3));
    // The second put's value goes to the arena, whose allocation fails once: the first put is applied already.
    vi.spyOn(ValueArena.prototype, "copy").mockImplementationOnce(() => {
      throw new RangeError("Array buffer allocation failed");
    });
    const batch = new WriteBatch().put("a", new Uint8Array([1])).put("j/x", new Uint8Array([2]));
    const err = await outcome(() => engine.commit(batch));
    expect(err).toBeInstanceOf(ClosedError);
    expect((err as Error).message).toMatch(/Array buffer allocation failed/);
    expect(engine.failure).toBe(err);
    // Nothing more is taken on top of a memory the WAL does not match.
    await expect(engine.commit(put("later", 1))).rejects.toBeInstanceOf(ClosedError);
    await engine.close().catch(() => undefined);
    vi.restoreAllMocks();
    const reopened = await Engine.open(store, { pageValues: { keyPrefixes: ["j/"], minBytes: 1 } });
    expect(reopened.get("before")?.byteLength).toBe(3);
    const halves = [reopened.get("a") !== undefined, (await reopened.warm(["j/x"]), reopened.get("j/x") !== undefined)];
    expect(halves[0]).toBe(halves[1]);
    expect(reopened.get("later")).toBeUndefined();
    await reopened.close();
  });
});
