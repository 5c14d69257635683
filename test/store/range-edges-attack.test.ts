/**
 * @module Ranged reads at the edges the conformance suite leaves out, for
 * every store that reads into a caller's buffer (memory, a local directory,
 * S3 over s3rver) and through the wrappers and a queue's prefixed view: an
 * empty object read from its start (S3 answers such a range 416; s3rver
 * answered 206 and sent nothing, so the read waited for its attempt's
 * timeout), ranges ending on an object's last byte, starting at or past its
 * end, empty buffers, and views into a larger buffer whose bytes around
 * them must stay as they were.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, S3Store, withCounting, withFaults, withLatency, type ObjectStore } from "taquba";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { readRangeInto } from "../../runtime/store/object-store.js";
import { useS3Server } from "../support/use-s3-server.js";

const server = useS3Server();
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

const five = new Uint8Array([11, 22, 33, 44, 55]);

/** Reads `length` bytes from `offset` into the middle of a buffer filled with a marker: the bytes read and whether the rest stayed marked. */
async function readInto(store: ObjectStore, key: string, offset: number, length: number) {
  const whole = new Uint8Array(length + 8).fill(0xaa);
  const into = whole.subarray(4, 4 + length);
  const n = await store.getRangeInto!(key, offset, into);
  const rest = [...whole.subarray(0, 4), ...whole.subarray(4 + (n ?? 0))];
  return { n, got: [...into.subarray(0, n ?? 0)], restMarked: rest.every((b) => b === 0xaa) };
}

/** One attempt that gives up after 2 s: a read that hangs fails the test quickly instead of waiting out the default timeouts. */
const stores: [string, () => Promise<ObjectStore>][] = [
  ["MemoryStore", async () => new MemoryStore()],
  [
    "LocalStore",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "taquba-range-edges-"));
      dirs.push(dir);
      return new LocalStore(dir);
    },
  ],
  [
    "S3Store on s3rver",
    async () =>
      new S3Store({
        bucket: server.bucket,
        prefix: `range-edges-${Math.random().toString(36).slice(2)}`,
        clientConfig: server.clientConfig,
        retry: { maxAttempts: 1, attemptTimeoutMs: 2000 },
      }),
  ],
];

describe.each(stores)("ranged reads at the edges: %s", (_name, make) => {
  it("an empty object reads as empty from its start and past it, into a buffer and as a range; an absent one as null", async () => {
    const store = await make();
    await store.put("empty", new Uint8Array(0));
    for (const [offset, length] of [
      [0, 4],
      [0, 1],
      [0, 0],
      [3, 2],
    ] as const) {
      expect(await readInto(store, "empty", offset, length), `into ${offset}+${length}`).toEqual({ n: 0, got: [], restMarked: true });
      if (length > 0) expect([...(await store.getRange!("empty", offset, length))!], `range ${offset}+${length}`).toEqual([]);
    }
    expect(await store.getRangeInto!("absent", 0, new Uint8Array(0))).toBeNull();
    expect(await store.getRangeInto!("absent", 0, new Uint8Array(3))).toBeNull();
  });

  it("ranges ending on the last byte, starting at the end or past it, and empty buffers", async () => {
    const store = await make();
    await store.put("five", five);
    expect(await readInto(store, "five", 0, 5)).toEqual({ n: 5, got: [...five], restMarked: true });
    expect(await readInto(store, "five", 4, 1)).toEqual({ n: 1, got: [55], restMarked: true });
    expect(await readInto(store, "five", 3, 9)).toEqual({ n: 2, got: [44, 55], restMarked: true });
    expect(await readInto(store, "five", 5, 3)).toEqual({ n: 0, got: [], restMarked: true });
    expect(await readInto(store, "five", 900, 3)).toEqual({ n: 0, got: [], restMarked: true });
    expect(await readInto(store, "five", 2, 0)).toEqual({ n: 0, got: [], restMarked: true });
    expect(await readInto(store, "five", 9, 0)).toEqual({ n: 0, got: [], restMarked: true });
  });

  it("through withCounting, withLatency, withFaults and a queue's prefixed view: the same answers, the prefix's own object", async () => {
    const inner = await make();
    await inner.put("five", new Uint8Array([9, 9, 9]));
    await inner.put("q/five", five);
    await inner.put("q/empty", new Uint8Array(0));
    const wrapped = withFaults(withLatency(withCounting(new PrefixedStore(inner, "q/")), { ms: 0 }), { failureRate: 0 });
    expect(await readInto(wrapped, "five", 3, 4)).toEqual({ n: 2, got: [44, 55], restMarked: true });
    expect(await readInto(wrapped, "empty", 0, 4)).toEqual({ n: 0, got: [], restMarked: true });
    const into = new Uint8Array(16);
    expect([...(await readRangeInto(wrapped, "five", 1, 3, into))!]).toEqual([22, 33, 44]);
    expect([...(await readRangeInto(wrapped, "empty", 0, 3, into))!]).toEqual([]);
    expect(await readRangeInto(wrapped, "absent", 0, 3, into)).toBeNull();
  });
});
