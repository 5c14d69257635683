/**
 * @module What an engine's stored WAL objects hold, read back from the
 * store: for the tests of how commits are grouped into objects.
 */
import type { MemoryStore } from "taquba";
import { decodeWal } from "../../runtime/engine/wal-format.js";

/** Commits in each stored WAL object after the first `skip`, in sequence order. */
export async function batchesPerObject(store: MemoryStore, skip = 0): Promise<number[]> {
  const out: number[] = [];
  for await (const { key } of store.list("wal/")) {
    const obj = await store.get(key);
    const wal = decodeWal(key, obj!.body, Number(key.slice("wal/".length)));
    if (wal.kind === "batches") out.push(wal.batches.length);
  }
  return out.slice(skip);
}
