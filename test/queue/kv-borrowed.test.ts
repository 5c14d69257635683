/**
 * @module Caller KV values lent for one decode (`Queue.kvBorrowNow`): the
 * bytes are the engine's own, not a copy, so what is decoded from them must
 * share no memory with the queue, and a view decoded late (after a write of
 * its key, a checkpoint, a compaction, a close and reopen) still decodes to
 * the value it was read as. Over a MemoryStore, a LocalStore and s3rver,
 * with and without record paging (the engine holds a caller value as its
 * own array without it; packed into a string, an arena view or a copy with
 * it).
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, Queue, S3Store, ValidationError, type ObjectStore, type OpenOptions } from "taquba";
import { type BorrowedBytes, decodeBorrowed } from "../../runtime/queue/borrowed-bytes.js";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const server = useS3Server();
const tempDir = useTempDirs("taquba-kv-borrowed-");

/** Values of each size the engine holds differently: up to 64 bytes, up to 1 KiB (packed), larger (a copy of its own). */
const SIZES = [10, 200, 3000] as const;

interface Held {
  n: number;
  fill: number;
  bin: Uint8Array;
}

/** A record with a binary field, as the runtime's own records hold results and payloads. */
function record(n: number, fill: number): Uint8Array {
  return encodeValue({ n, fill, bin: new Uint8Array(n).fill(fill) });
}

function decoded(view: BorrowedBytes | null, key: string): Held {
  expect(view, key).not.toBeNull();
  return decodeBorrowed(view!, key, decodeValue) as Held;
}

function expectHeld(h: Held, n: number, fill: number): void {
  expect(h.n).toBe(n);
  expect(h.fill).toBe(fill);
  expect(h.bin).toEqual(new Uint8Array(n).fill(fill));
}

const stores: [string, () => Promise<() => ObjectStore>][] = [
  [
    "a MemoryStore",
    async () => {
      const store = new MemoryStore();
      return () => store;
    },
  ],
  [
    "a LocalStore",
    async () => {
      const dir = await tempDir();
      return () => new LocalStore(dir);
    },
  ],
  [
    "s3rver",
    async () => {
      const prefix = `borrowed-${Math.random().toString(36).slice(2)}`;
      return () => new S3Store({ bucket: server.bucket, prefix, clientConfig: server.clientConfig });
    },
  ],
];

/** A checkpoint after every WAL object, each one a compaction (one segment run). */
const compacting = { engineOptions: { checkpointWalObjects: 1, maxSegmentRuns: 1 } } satisfies OpenOptions;
const pagings: [string, OpenOptions][] = [
  ["with record paging", compacting],
  ["without record paging", { ...compacting, recordCacheBytes: null }],
];

describe.each(stores.flatMap(([s, make]) => pagings.map(([p, opts]) => [`${s}, ${p}`, make, opts] as const)))(
  "caller KV values lent for a decode (%s)",
  (_label, make, opts) => {
    it("decode to the value they were read as after a write, a checkpoint, a compaction and a reopen, into records sharing no memory with the queue", async () => {
      const storeOf = await make();
      let queue = await Queue.open(storeOf(), "q", opts);
      try {
        const key = (n: number) => `k${n}`;
        /** Each size's view decodes to its value written with `fill`. */
        const expectAll = (views: (BorrowedBytes | null)[], fill: number) => {
          for (const [i, n] of SIZES.entries()) expectHeld(decoded(views[i]!, key(n)), n, fill);
        };
        for (const n of SIZES) await queue.kvPut(key(n), record(n, 1));
        const first = SIZES.map((n) => queue.kvBorrowNow(key(n)));

        // A write of each key between the read and the decode.
        for (const n of SIZES) await queue.kvPut(key(n), record(n, 2));
        expectAll(first, 1);
        const second = SIZES.map((n) => queue.kvBorrowNow(key(n)));

        // Checkpoints that rewrite the whole state (compactions), the values paged or packed anew.
        const compactions = queue.engineStats.compactions;
        // Write again after each checkpoint until one compacts: waiting on one write's compaction once timed out in CI
        // (cause not found). The fsyncs wait on a shared disk: the bound scales with the load.
        for (let i = 0; queue.engineStats.compactions === compactions; i++) {
          expect(i, "writes, each followed by a checkpoint, before a compaction").toBeLessThan(8);
          const checkpoints = queue.engineStats.checkpoints;
          await queue.kvPut(`later/${i}`, record(1, 0));
          await queue.flush();
          await until(
            "a checkpoint after the write",
            () => queue.engineStats.checkpoints > checkpoints || queue.engineStats.compactions > compactions,
            scaledForLoad(5_000),
          );
        }
        expectAll(first, 1);
        expectAll(second, 2);

        // What a decode hands out is the caller's: changing it changes no read, checkpoint or replay.
        for (const n of SIZES) decoded(queue.kvBorrowNow(key(n)), key(n)).bin.fill(0xee);
        for (const n of SIZES) expect(decodeValue((await queue.kvGet(key(n)))!), key(n)).toEqual({ n, fill: 2, bin: new Uint8Array(n).fill(2) });

        await queue.close();
        queue = await Queue.open(storeOf(), "q", opts);
        expectAll(first, 1);
        expectAll(second, 2);
        for (const n of SIZES) expectHeld(decoded(queue.kvBorrowNow(key(n)), key(n)), n, 2);
      } finally {
        await queue.close();
      }
    });
  },
);

describe("kvBorrowNow's keys", () => {
  it("answers null for a key never written, and refuses a key kvGet refuses, the same way, writing nothing", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      expect(queue.kvBorrowNow("absent")).toBeNull();
      for (const bad of ["", 42, null, {}, "x".repeat(100_000)] as unknown as string[]) {
        const viaGet = await queue.kvGet(bad).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(viaGet, String(bad).slice(0, 20)).toBeInstanceOf(ValidationError);
        expect(() => queue.kvBorrowNow(bad)).toThrow((viaGet as Error).message);
      }
      expect((await queue.kvScan("")).entries).toEqual([]);
    } finally {
      await queue.close();
    }
  });
});
