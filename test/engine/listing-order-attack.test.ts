/**
 * @module A store whose listings are not in key order, or repeat keys (a
 * proxy merging pages, a replica answering from two snapshots): the WAL
 * walk took a later object listed first for a gap, so a reader served the
 * state before the log (every key missing, or the commits after the last
 * checkpoint), a writer's open went round its fence 64 times and refused a
 * sound store, and a first pair swapped was refused as corrupted. Each
 * case ends with every commit served by a reader and by a writer that goes
 * on, checkpoints through the same listings, and reopens with every key.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, LocalStore, MemoryStore, WriteBatch, type ObjectStore } from "taquba";
import { DisorderedListings } from "../support/disordered-listings.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-listing-order-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

async function values(engine: Engine | EngineReader, n: number): Promise<(string | undefined)[]> {
  const out: (string | undefined)[] = [];
  for (let i = 0; i < n; i++) out.push(dec(await engine.get(`k${i}`)));
  return out;
}
const expected = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);

const stores: [string, () => Promise<ObjectStore>][] = [
  ["MemoryStore", async () => new MemoryStore()],
  ["LocalStore", async () => new LocalStore(await tempDir())],
];

describe("listings out of key order or repeating keys", () => {
  for (const [storeName, makeStore] of stores) {
    for (const disorder of ["reversed", "each key twice", "the first two swapped", "reversed, each key twice"] as const) {
      for (const checkpointed of [false, true]) {
        it(`${storeName}, ${disorder}, ${checkpointed ? "a checkpoint and commits after it" : "commits in the log only"}: a reader and a writer serve every commit`, async () => {
          const store = await makeStore();
          const writer = await Engine.open(store, MANUAL);
          for (let i = 0; i < 4; i++) await writer.commit(new WriteBatch().put(`k${i}`, enc(`v${i}`)));
          if (checkpointed) {
            await writer.checkpoint();
            for (let i = 4; i < 7; i++) await writer.commit(new WriteBatch().put(`k${i}`, enc(`v${i}`)));
          }
          await writer.close();
          let n = checkpointed ? 7 : 4;
          const disordered = new DisorderedListings(store, disorder);

          const reader = await EngineReader.open(disordered);
          expect(await values(reader, n)).toEqual(expected(n));

          const again = await Engine.open(disordered, MANUAL);
          expect(await values(again, n)).toEqual(expected(n));
          for (const i of [n, n + 1]) await again.commit(new WriteBatch().put(`k${i}`, enc(`v${i}`)));
          n += 2;
          // The reader follows the log through the same listings.
          await reader.refresh();
          expect(await values(reader, n)).toEqual(expected(n));
          await again.checkpoint();
          await again.commit(new WriteBatch().put(`k${n}`, enc(`v${n}`)));
          n += 1;
          await again.checkpoint();
          await reader.refresh();
          expect(await values(reader, n)).toEqual(expected(n));
          await reader.close();
          await again.close();

          for (const through of [disordered, store]) {
            const last = await Engine.open(through, MANUAL);
            expect(await values(last, n)).toEqual(expected(n));
            await last.close();
          }
        });
      }
    }
  }
});
