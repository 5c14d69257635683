/**
 * @module Full checkpoints (compactions) of keys built to stress the
 * compare past a shared prefix, end to end through an engine: ladders of
 * keys that are prefixes of each other, stems of 1-2 KiB shared by many
 * keys, neighbours one code unit apart, non-ASCII and astral keys, deletes
 * and rewrites between compactions, with and without paged values. After
 * every compaction the engine, a fresh reader and a reopened writer hold
 * exactly what a model holds, in order both ways, and prefix and bounded
 * scans agree. Keys with a lone surrogate are refused whole, changing
 * nothing.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, type EngineOptions, MemoryStore, TaqubaError, WriteBatch } from "taquba";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { type TestRandom, testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const retry = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
/** Every checkpoint a compaction (one run allowed), small blocks and segments so keys cross their bounds. */
const compacting: EngineOptions = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentRuns: 1,
  segmentBlockBytes: 512,
  maxSegmentBytes: 16 * 1024,
  retry,
};
const withPaging: EngineOptions = { ...compacting, pageValues: { keyPrefixes: [""], minBytes: 16, cacheBytes: 8 * 1024 } };

const PIECES = ["a", "b", "0", "/", "é", "日", "😀", "\u0000", "~", "\u007f", "\u0080", "\uffff", "\u{10000}", "\ue000"];

/** Stems shared by many keys: empty, short, 1-2 KiB of one character, and non-ASCII ones. */
function stems(r: TestRandom): string[] {
  return ["", "q/jobs/", "x".repeat(1024 + r.int(64)), "é".repeat(600), `${"😀".repeat(300)}/`, "k/\uffff/"];
}

/** A key of a ladder over a stem: each rung a key of its own now and then. */
function ladder(r: TestRandom, stem: string, into: Set<string>): void {
  let k = stem;
  const rungs = 1 + r.int(7);
  for (let i = 0; i < rungs; i++) {
    k += PIECES[r.int(PIECES.length)]!;
    if (r.random() < 0.4) into.add(k);
  }
  into.add(k);
  // A neighbour one code unit above the last character, when it stays well-formed.
  const last = k.charCodeAt(k.length - 1);
  if (last < 0xd7ff) into.add(`${k.slice(0, -1)}${String.fromCharCode(last + 1)}`);
}

type Model = Map<string, string>;

function sortedEntries(model: Model): [string, string][] {
  return [...model.entries()].sort((a, b) => compareKeys(a[0], b[0]));
}

/** Every live entry of `view`, read through scans (values warmed first when paged). */
async function scanned(view: Engine | EngineReader, opts: Parameters<Engine["scan"]>[0] = {}): Promise<[string, string][]> {
  if (view instanceof Engine) {
    const keys = [...view.keys(opts)];
    for (let p = view.warm(keys); p !== undefined; p = view.warm(keys)) await p;
  }
  const out: [string, string][] = [];
  for (const [k, v] of view.scan(opts)) out.push([k, dec(v)]);
  return out;
}

async function expectHolds(view: Engine | EngineReader, model: Model, r: TestRandom): Promise<void> {
  const all = sortedEntries(model);
  expect(await scanned(view)).toEqual(all);
  expect(await scanned(view, { reverse: true })).toEqual([...all].reverse());
  // Prefix scans at a few keys' prefixes, bounded scans between two keys.
  for (let i = 0; i < 6 && all.length > 0; i++) {
    const key = all[r.int(all.length)]![0];
    const prefix = key.slice(0, r.int(key.length + 1));
    if (prefix !== "" && /[\ud800-\udfff]$/.test(prefix)) continue;
    expect(await scanned(view, { prefix }), `prefix ${JSON.stringify(prefix.slice(0, 40))}`).toEqual(all.filter(([k]) => k.startsWith(prefix)));
    const other = all[r.int(all.length)]![0];
    const [lo, hi] = compareKeys(key, other) <= 0 ? [key, other] : [other, key];
    expect(await scanned(view, { start: lo, end: hi })).toEqual(all.filter(([k]) => compareKeys(k, lo) >= 0 && compareKeys(k, hi) < 0));
  }
}

describe("full checkpoints of keys sharing long prefixes", () => {
  for (const [name, opts] of [
    ["values in memory", compacting],
    ["values paged", withPaging],
  ] as const) {
    it(
      `ladders, long stems and near neighbours through compactions, a reader and reopens hold the model (${name})`,
      async () => {
        const r = testRandom(`full checkpoint keys ${name}`);
        const store = new MemoryStore();
        const model: Model = new Map();
        let engine = await Engine.open(store, opts);
        const reader = await EngineReader.open(store);
        try {
          const all = stems(r);
          for (let round = 0; round < 8; round++) {
            const keys = new Set<string>();
            while (keys.size < 150) ladder(r, all[r.int(all.length)]!, keys);
            const b = new WriteBatch();
            for (const k of keys) {
              const v = `${round}:${r.int(1000)}`.padEnd(r.random() < 0.3 ? 40 : 4, "v");
              b.put(k, enc(v));
              model.set(k, v);
            }
            // Deletes of earlier keys, prefixes of live keys among them.
            const known = [...model.keys()];
            for (let i = 0; i < 30; i++) {
              const k = known[r.int(known.length)]!;
              b.delete(k);
              model.delete(k);
            }
            await engine.commit(b);
            await engine.checkpoint();
            expect(engine.stats.segmentRuns).toBe(1);
            await expectHolds(engine, model, r);
            await reader.refresh();
            await expectHolds(reader, model, r);
            if (round % 3 === 2) {
              await engine.close();
              engine = await Engine.open(store, opts);
              await expectHolds(engine, model, r);
            }
          }
          expect(engine.stats.compactions).toBeGreaterThan(0);
        } finally {
          await reader.close();
          await engine.close();
        }
      },
      HEAVY_TEST_MS,
    );
  }

  it("a batch holding a key with a lone surrogate is refused whole, before or after compactions, and changes nothing", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, compacting);
    try {
      const stem = "é".repeat(600);
      await engine.commit(new WriteBatch().put(`${stem}a`, enc("1")).put(`${stem}\ud83d\ude00`, enc("2")));
      await engine.checkpoint();
      for (const bad of [`${stem}\ud83d`, `${stem}\ude00`, "\ud800", `${stem}a\udfff`]) {
        const refused = await engine.commit(new WriteBatch().put(`${stem}b`, enc("3")).put(bad, enc("x"))).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(refused).toBeInstanceOf(TaqubaError);
        expect(engine.get(`${stem}b`)).toBeUndefined();
      }
      await engine.checkpoint();
      expect((await scanned(engine)).map(([k, v]) => [k.slice(600), v])).toEqual([
        ["a", "1"],
        ["\ud83d\ude00", "2"],
      ]);
    } finally {
      await engine.close();
    }
    const again = await Engine.open(store, compacting);
    expect((await scanned(again)).length).toBe(2);
    await again.close();
  });
});
