/**
 * @module `Engine.declareKeyHeads`: key heads declared while the engine
 * runs. The state against a model while heads arrive with keys in the
 * memtable and with a frozen memtable still copied into its run; the engine
 * against a model across declarations, freezes of a small memtable,
 * checkpoints and reopens with no declaration (heads live in memory only).
 * Then the method's check (as the option's), its merge with the option's
 * set and earlier declarations (repeats and order change nothing; past 32
 * refused, nothing changed), and a closed engine.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, MemoryStore, ValidationError, WriteBatch, type EngineOptions } from "taquba";
import { withCounting } from "taquba/testing";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { KeyHeads } from "../../runtime/engine/key-heads.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

const FAMILIES = ["u/workflow/runs/", "u/workflow/steps/", "u/workflow/history/"];
const STEMS = [
  "",
  "c/q/",
  "j/",
  "u/",
  "u/workflow/",
  "u/workflow/runs/",
  "u/workflow/runs0",
  "u/workflow/runs",
  "u/workflow/steps/",
  "u/workflow/steps0",
  "u/workflow/history/",
  "u/workflow/history0",
  "u/workflow0",
  "u/\u00e9",
  "\u007f",
  "\u0080",
  "\ue000",
];

function randomKey(r: TestRandom): string {
  const stem = STEMS[r.int(STEMS.length)]!;
  return r.int(4) === 0 ? stem : `${stem}${String(r.int(300)).padStart(3, "0")}`;
}

/** Every read the engine answers, against the model. */
function expectEngineReads(engine: Engine, model: Map<string, string>, label: string): void {
  const sorted = [...model.entries()].sort(([a], [b]) => compareKeys(a, b));
  expect(
    [...engine.scan()].map(([k, v]) => [k, dec(v)]),
    `${label}: all`,
  ).toEqual(sorted);
  expect([...engine.keys({ reverse: true })], `${label}: all reversed`).toEqual(sorted.map(([k]) => k).reverse());
  for (const stem of STEMS) {
    expect(engine.get(stem) === undefined ? undefined : dec(engine.get(stem)!), `${label}: get ${JSON.stringify(stem)}`).toBe(model.get(stem));
    const within = sorted.filter(([k]) => k.startsWith(stem)).map(([k]) => k);
    expect([...engine.keys({ prefix: stem })], `${label}: prefix ${JSON.stringify(stem)}`).toEqual(within);
    expect([...engine.keys({ prefix: stem, reverse: true })], `${label}: prefix ${JSON.stringify(stem)} reversed`).toEqual([...within].reverse());
    const from = sorted.filter(([k]) => compareKeys(k, stem) >= 0).map(([k]) => k);
    expect([...engine.keys({ start: stem, limit: 5 })], `${label}: from ${JSON.stringify(stem)}`).toEqual(from.slice(0, 5));
  }
}

describe("LayeredState.setKeyHeads", () => {
  it("takes heads while the memtable holds keys and a frozen memtable is still copied; reads, scans and an earlier snapshot stay right", {
    timeout: HEAVY_TEST_MS,
  }, () => {
    const r = testRandom("layered state heads arriving");
    const state = new LayeredState({ memtableKeys: 200, writeSlice: 1, idleSlice: 0 });
    const model = new Map<string, string>();
    const value = (s: string) => enc(s);
    const write = (n: number, tag: string) => {
      for (let i = 0; i < n; i++) {
        const key = randomKey(r);
        if (r.int(100) < 25 && model.has(key)) {
          state.delete(key);
          model.delete(key);
        } else {
          state.set(key, value(`${tag}.${i}`));
          model.set(key, `${tag}.${i}`);
        }
      }
    };
    const expectState = (label: string, m: Map<string, string> = model, entries: Iterable<[string, unknown]> = state.scan()) => {
      const sorted = [...m.entries()].sort(([a], [b]) => compareKeys(a, b));
      expect(
        [...entries].map(([k, v]) => [k, dec(v as Uint8Array)]),
        label,
      ).toEqual(sorted);
      if (m === model)
        for (const stem of STEMS)
          expect(state.get(stem) === undefined ? undefined : dec(state.get(stem) as Uint8Array), `${label}: get ${stem}`).toBe(m.get(stem));
    };
    const sets = [FAMILIES, FAMILIES.slice(0, 2), [...FAMILIES, "u/workflow/", "j/"], []];
    let declaredWithFrozen = 0;
    // Twelve rounds, then on (up to four times as many) until a declaration met a frozen memtable: where the freezes fall
    // depends on the seed's sizes, and about one seed in eight meets none in twelve rounds.
    for (let round = 0; round < 12 || (declaredWithFrozen === 0 && round < 48); round++) {
      write(60 + r.int(200), `r${round}`);
      const heads = KeyHeads.of(sets[round % sets.length]!);
      // A snapshot copies a frozen memtable into its run first: only some rounds take one, so others meet a frozen one.
      const snapshot = round % 3 === 2 ? state.snapshot() : undefined;
      const atSnapshot = new Map(model);
      const frozenBefore = state.layout.frozen;
      const keysBefore = state.layout.memtableKeys;
      state.setKeyHeads(heads);
      if (frozenBefore > 0) declaredWithFrozen++;
      expect(state.keyHeads, `round ${round}`).toBe(heads);
      expect(state.layout.memtableKeys, `round ${round}: the memtable keeps its keys`).toBe(keysBefore);
      expect(state.layout.frozen, `round ${round}: the frozen memtable is left as it was`).toBe(frozenBefore);
      expectState(`round ${round}, heads ${JSON.stringify(heads.prefixes)} taken (frozen left ${frozenBefore})`);
      write(150, `r${round}b`);
      // The tables after it (the writes froze it often) take its heads.
      expect(state.keyHeads, `round ${round}, after writes`).toBe(heads);
      expectState(`round ${round}, after writes`);
      if (snapshot !== undefined) expectState(`round ${round}, the snapshot before`, atSnapshot, snapshot.entries() as Iterable<[string, unknown]>);
    }
    // The rounds were sized so some declarations met a frozen memtable: a test of that case must have made it.
    expect(declaredWithFrozen).toBeGreaterThan(0);
    expect(state.counters.freezes).toBeGreaterThan(5);
  });
});

describe("Engine.declareKeyHeads", () => {
  it("reads everything the same across declarations, freezes, checkpoints and reopens with no declaration", { timeout: HEAVY_TEST_MS }, async () => {
    const r = testRandom("engine declared heads reopen");
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const declarations: (readonly string[])[] = [FAMILIES, FAMILIES.slice(0, 2), ["u/workflow/", "j/", "c/q/"], []];
    for (let run = 0; run < 5; run++) {
      // Every other run opens with heads of its own; the others with none, so nothing declared before carries over.
      const opts: EngineOptions = { memtableKeys: 1024, ...(run % 2 === 1 ? { keyHeads: ["u/workflow/steps/", "c/"] } : {}) };
      const engine = await Engine.open(store, opts);
      expect(engine.keyHeads).toEqual(run % 2 === 1 ? ["c/", "u/workflow/steps/"] : []);
      expectEngineReads(engine, model, `run ${run}, opened`);
      const declareAt = new Set([r.int(20), r.int(20)]);
      for (let b = 0; b < 20; b++) {
        if (declareAt.has(b)) {
          const declared = declarations[(run + b) % declarations.length]!;
          engine.declareKeyHeads(declared);
          for (const p of declared) expect(engine.keyHeads).toContain(p);
          expectEngineReads(engine, model, `run ${run}, batch ${b}, declared ${JSON.stringify(declared)}`);
        }
        const batch = new WriteBatch();
        for (let i = 0; i < 60; i++) {
          const key = randomKey(r);
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
        if (b === 12) await engine.checkpoint();
      }
      expect(engine.stats.memtableKeys).toBeGreaterThan(0);
      expectEngineReads(engine, model, `run ${run}, after its writes`);
      await engine.close();
    }
    const plain = await Engine.open(store);
    expect(plain.keyHeads).toEqual([]);
    expectEngineReads(plain, model, "reopened with no heads at all");
    await plain.close();
  });

  it.each([
    ["not an array", "u/workflow/", /declareKeyHeads' prefixes must be an array of key prefixes \(strings\), got "u\/workflow\/"/],
    ["a number in the list", ["u/", 3], /declareKeyHeads' prefixes\[1\] must be a string, got number/],
    ["an empty prefix", [""], /declareKeyHeads' prefixes\[0\] must be 1 to 256 characters long, got 0/],
    ["a prefix too long", ["x".repeat(257)], /declareKeyHeads' prefixes\[0\] must be 1 to 256 characters long, got 257/],
    ["a non-ASCII prefix", ["u/caf\u00e9/"], /declareKeyHeads' prefixes\[0\] must be ASCII/],
    ["a repeated prefix", ["u/a/", "u/b/", "u/a/"], /declareKeyHeads' prefixes\[2\] repeats the prefix "u\/a\/"/],
    ["too many prefixes", Array.from({ length: 33 }, (_, i) => `p${i}/`), /declareKeyHeads' prefixes may hold at most 32 prefixes, got 33/],
    ["a list claiming billions of entries", Object.assign([], { length: 2 ** 31 }), /may hold at most 32 prefixes, got 2147483648/],
  ])("refuses %s as the option does, changing nothing and making no store request", async (_label, given, says) => {
    const store = withCounting(new MemoryStore());
    const engine = await Engine.open(store, { keyHeads: ["j/"] });
    try {
      const before = store.counts.gets + store.counts.puts + store.counts.lists + store.counts.deletes;
      let err: unknown;
      try {
        engine.declareKeyHeads(given as string[]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect(String((err as ValidationError).issues)).toMatch(says);
      expect(engine.keyHeads).toEqual(["j/"]);
      expect(store.counts.gets + store.counts.puts + store.counts.lists + store.counts.deletes).toBe(before);
    } finally {
      await engine.close();
    }
  });

  it("merges with the option's heads and earlier declarations: repeats and order change nothing; past 32 it refuses and changes nothing", async () => {
    const own = Array.from({ length: 30 }, (_, i) => `p${String(i).padStart(2, "0")}/`);
    const engine = await Engine.open(new MemoryStore(), { keyHeads: own });
    try {
      engine.declareKeyHeads(["p03/", "p07/"]);
      expect(engine.keyHeads).toEqual(own);
      engine.declareKeyHeads(["z/", "p01/"]);
      expect(engine.keyHeads).toEqual([...own, "z/"]);
      const at31 = engine.keyHeads;
      // Two new ones would make 33: neither is taken.
      expect(() => engine.declareKeyHeads(["y/", "x/", "z/"])).toThrow(/at most 32 key heads: 31 are declared.*add 2 more; nothing changed/);
      expect(engine.keyHeads).toBe(at31);
      engine.declareKeyHeads(["x/"]);
      expect(engine.keyHeads).toHaveLength(32);
      expect(() => engine.declareKeyHeads(["y/"])).toThrow(ValidationError);
      // Declaring what is declared is fine at the bound.
      engine.declareKeyHeads(["x/", "z/", "p29/"]);
      expect(engine.keyHeads).toHaveLength(32);
    } finally {
      await engine.close();
    }
    // The same prefixes declared in any order, in any grouping, give the same heads.
    const a = await Engine.open(new MemoryStore());
    const b = await Engine.open(new MemoryStore());
    try {
      a.declareKeyHeads(["u/b/", "u/a/"]);
      a.declareKeyHeads(["u/c/", "u/b/"]);
      b.declareKeyHeads(["u/c/"]);
      b.declareKeyHeads(["u/a/", "u/b/", "u/c/"]);
      expect(a.keyHeads).toEqual(["u/a/", "u/b/", "u/c/"]);
      expect(b.keyHeads).toEqual(a.keyHeads);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("refuses with ClosedError once the engine is closed", async () => {
    const engine = await Engine.open(new MemoryStore());
    engine.declareKeyHeads(["u/a/"]);
    await engine.close();
    expect(() => engine.declareKeyHeads(["u/b/"])).toThrow(ClosedError);
    expect(() => engine.declareKeyHeads(["u/a/"])).toThrow(ClosedError);
  });
});
