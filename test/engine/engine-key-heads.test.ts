/**
 * @module `EngineOptions.keyHeads` through the engine: an engine opened with
 * some declared prefixes, other ones or none over the same store reads the
 * same entries (heads live in memory only), through commits replayed from
 * the WAL, checkpoints, freezes of a small memtable and reopens; scans
 * across every declared boundary in both directions. And the option's
 * check: a bad list is refused before any store request.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, ValidationError, WriteBatch, type EngineOptions } from "taquba";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { openError } from "./fixtures/engine-open-error.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Each run of the store opens with the next of these. */
const LAYOUTS: readonly (readonly string[] | undefined)[] = [
  ["u/workflow/runs/", "u/workflow/steps/", "u/workflow/history/"],
  undefined,
  ["u/workflow/", "u/workflow/runs/", "j/", "c/q/"],
  [],
  ["u/workflow/steps/", "u/workflow/runs/"],
];

const STEMS = [
  "",
  "c/q/",
  "c/q0",
  "c/",
  "j/",
  "j0",
  "u/",
  "u/workflow/",
  "u/workflow/runs/",
  "u/workflow/runs0",
  "u/workflow/runs",
  "u/workflow/steps/",
  "u/workflow/steps0",
  "u/workflow/history/",
  "u/workflow0",
  "u/workflox",
  "u/\u00e9",
  "\u007f",
  "\u0080",
  "\ue000",
  "\ud83d\ude00",
];

describe("EngineOptions.keyHeads", () => {
  it("an engine opened with other declared heads, or none, over the same store reads everything the same", { timeout: HEAVY_TEST_MS }, async () => {
    const r = testRandom("engine key heads reopen");
    const store = new MemoryStore();
    const model = new Map<string, string>();
    for (let run = 0; run < 7; run++) {
      const heads = LAYOUTS[run % LAYOUTS.length];
      // A small memtable freezes into key runs within a run, so reads cross the memtable and runs.
      const opts: EngineOptions = { memtableKeys: 1024, ...(heads === undefined ? {} : { keyHeads: heads }) };
      const engine = await Engine.open(store, opts);
      const expectSame = (label: string) => {
        const sorted = [...model.entries()].sort(([a], [b]) => compareKeys(a, b));
        expect(
          [...engine.scan()].map(([k, v]) => [k, dec(v)]),
          `${label}: all`,
        ).toEqual(sorted);
        expect(
          [...engine.scan({ reverse: true })].map(([k]) => k),
          `${label}: all reversed`,
        ).toEqual(sorted.map(([k]) => k).reverse());
        for (const stem of STEMS) {
          expect(engine.get(stem) === undefined ? undefined : dec(engine.get(stem)!), `${label}: get ${JSON.stringify(stem)}`).toBe(model.get(stem));
          const within = sorted.filter(([k]) => k.startsWith(stem)).map(([k]) => k);
          expect([...engine.keys({ prefix: stem })], `${label}: prefix ${JSON.stringify(stem)}`).toEqual(within);
          expect([...engine.keys({ prefix: stem, reverse: true })], `${label}: prefix ${JSON.stringify(stem)} reversed`).toEqual([...within].reverse());
          const from = sorted.filter(([k]) => compareKeys(k, stem) >= 0).map(([k]) => k);
          expect([...engine.keys({ start: stem, limit: 5 })], `${label}: from ${JSON.stringify(stem)}`).toEqual(from.slice(0, 5));
          const below = sorted.filter(([k]) => compareKeys(k, stem) < 0).map(([k]) => k);
          expect([...engine.keys({ end: stem, reverse: true, limit: 5 })], `${label}: down from ${JSON.stringify(stem)}`).toEqual(below.reverse().slice(0, 5));
        }
      };
      expectSame(`run ${run}, opened with ${JSON.stringify(heads)}`);
      for (let b = 0; b < 20; b++) {
        const batch = new WriteBatch();
        for (let i = 0; i < 50; i++) {
          const stem = STEMS[r.int(STEMS.length)]!;
          const key = r.int(4) === 0 ? stem : `${stem}${String(r.int(300)).padStart(3, "0")}`;
          if (r.int(100) < 30 && model.has(key)) {
            batch.delete(key);
            model.delete(key);
          } else {
            const v = `${run}.${b}.${i}`;
            batch.put(key, enc(v));
            model.set(key, v);
          }
        }
        await engine.commit(batch);
        if (b === 10 && run % 2 === 0) await engine.checkpoint();
      }
      expectSame(`run ${run}, after its writes`);
      await engine.close();
    }
  });

  it.each([
    ["not an array", { keyHeads: "u/workflow/" }, /keyHeads must be an array of key prefixes \(strings\), got "u\/workflow\/"/],
    ["a number in the list", { keyHeads: ["u/", 3] }, /keyHeads\[1\] must be a string, got number/],
    ["an empty prefix", { keyHeads: [""] }, /keyHeads\[0\] must be 1 to 256 characters long, got 0/],
    ["a non-ASCII prefix", { keyHeads: ["u/caf\u00e9/"] }, /keyHeads\[0\] must be ASCII/],
    ["a repeated prefix", { keyHeads: ["u/a/", "u/b/", "u/a/"] }, /keyHeads\[2\] repeats the prefix "u\/a\/"/],
    ["too many prefixes", { keyHeads: Array.from({ length: 33 }, (_, i) => `p${i}/`) }, /keyHeads may hold at most 32 prefixes, got 33/],
    ["a list claiming billions of entries", { keyHeads: Object.assign([], { length: 2 ** 31 }) }, /keyHeads may hold at most 32 prefixes, got 2147483648/],
  ])("refuses %s before any store request", async (_label, opts, says) => {
    const { err, requests } = await openError(opts);
    expect(err).toBeInstanceOf(ValidationError);
    expect(String((err as ValidationError).issues)).toMatch(says);
    expect(requests).toBe(0);
  });
});
