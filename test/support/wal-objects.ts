/**
 * @module What an engine's stored WAL objects hold, read back from the
 * store: for the tests of how commits are grouped into objects.
 */
import type { ObjectStore } from "taquba";
import { decodeWal } from "../../runtime/engine/wal-format.js";

/** Commits in each stored WAL object after the first `skip`, in sequence order. */
export async function batchesPerObject(store: ObjectStore, skip = 0): Promise<number[]> {
  const out: number[] = [];
  for await (const { key } of store.list("wal/")) {
    const obj = await store.get(key);
    const wal = decodeWal(key, obj!.body, Number(key.slice("wal/".length)));
    if (wal.kind === "batches") out.push(wal.batches.length);
  }
  return out.slice(skip);
}

/** The keys each stored WAL object's commits put, object by object in sequence order. */
export async function keysPerObject(store: ObjectStore): Promise<string[][]> {
  const out: string[][] = [];
  for await (const { key } of store.list("wal/")) {
    const obj = await store.get(key);
    const wal = decodeWal(key, obj!.body, Number(key.slice("wal/".length)));
    if (wal.kind === "batches") out.push(wal.batches.flatMap((ops) => ops.map((op) => op.key)));
  }
  return out;
}
