/**
 * @module How many key bytes open's merge of segment runs compares
 * (open-merge.ts counts them): two runs whose ascending stretches alternate
 * and end at no round key, as two writers' checkpoints interleave. While a
 * run leads, its next key is compared with the rival's only from the byte
 * where the key before it differed from the rival's; a key that shares
 * exactly that many bytes with the one before is compared on from there,
 * which keeps the lead without sifting the heap and comparing again from
 * the first byte. The counts are exact for this input, so a change that
 * compares more than it needs is seen here, whatever its wall time.
 */
import { describe, expect, it } from "vitest";
import type { MemoryStore } from "taquba";
import type { Manifest } from "../../runtime/engine/manifest.js";
import { mergeComparisons } from "../../runtime/engine/open-merge.js";
import { loadSegments } from "../../runtime/engine/recovery.js";
import { ctxOf, type Entries, POLICY, show, storeOf } from "../support/segment-runs.js";

const enc = (s: string) => new TextEncoder().encode(s);

async function load(store: MemoryStore, manifest: Manifest) {
  const state = (await loadSegments(ctxOf(store), manifest, undefined, POLICY))!;
  state.stopIdleMerges();
  return state;
}

/** Two runs taking turns at stretches of 1 to 53 ids (a fixed sequence), ids padded to 10 digits. */
function alternatingRuns(): { runs: Entries[]; keys: string[] } {
  const runs: Entries[] = [[], []];
  const keys: string[] = [];
  let id = 0;
  for (let stretch = 0; stretch < 400; stretch++) {
    const length = 1 + ((stretch * 37) % 53);
    for (let i = 0; i < length; i++, id++) {
      const key = `k/${String(id).padStart(10, "0")}`;
      runs[stretch % 2]!.push([key, enc(String(stretch % 2))]);
      keys.push(key);
    }
  }
  return { runs, keys };
}

describe("open's merge of segment runs compares keys", () => {
  it("from where the leader's key before differed from its rival's: 16,063 bytes for 10,811 keys in two alternating runs, not 22,734", async () => {
    const { runs, keys } = alternatingRuns();
    const { store, manifest } = await storeOf(runs, 100_000);
    const before = mergeComparisons.bytes;
    const state = await load(store, manifest);
    const compared = mergeComparisons.bytes - before;
    // Every key once, with the value of the run that holds it ("0" is 0x30).
    expect(state.size).toBe(keys.length);
    expect([...state.scan()].map(([k]) => k)).toEqual(keys);
    for (const [run, entries] of runs.entries()) for (const [k] of entries.slice(0, 50)) expect(show(k, state.get(k)), k).toBe(`bytes:3${run}`);
    // Measured: 16,063 bytes with the leader's comparison resumed where it stopped; 22,734 (+42 %) when every
    // leader whose next key shares exactly that many bytes gives up the lead to a full sift and compares again.
    expect(compared).toBeLessThanOrEqual(16_063);
  });
});
