/**
 * @module Attacks on the changed-keys arrays reused across cuts
 * (`ChangedKeysSpares`): checkpoints that fail part way (a segment or a
 * manifest put refused, at seeded random), checkpoints started beside a
 * compaction (whose carry is merged into the first of them and retired),
 * with values paged out or not, while commits go on. A retired map handed
 * to the next cut must never show through: the engine's state equals the
 * model after every round, and a reopen reads the same state.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreUnavailableError, WriteBatch, type EngineOptions } from "taquba";
import { ChangedKeysSpares } from "../../runtime/engine/changed-keys.js";
import { failWhen } from "../support/failing-store.js";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
type Model = Map<string, string>;

function sorted(m: Model): [string, string][] {
  return [...m.entries()].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

const SPACE = 400;
const keyOf = (n: number) => `k/${String(n).padStart(4, "0")}`;

/** Every key of the key space the engine holds, with its value (paged values warmed first, then read in one turn). */
async function contents(engine: Engine): Promise<Model> {
  const keys = Array.from({ length: SPACE }, (_, n) => keyOf(n)).filter((k) => engine.has(k));
  for (let w = engine.warm(keys); w !== undefined; w = engine.warm(keys)) await w;
  const out: Model = new Map();
  for (const k of keys) out.set(k, dec(engine.get(k)!));
  return out;
}

describe("changed-keys arrays reused across failing and concurrent checkpoints", () => {
  for (const [name, paging] of [
    ["values in memory", undefined],
    ["values paged out with no cache", { keyPrefixes: [""], minBytes: 0, cacheBytes: 0 }],
  ] as [string, EngineOptions["pageValues"]][]) {
    it(`keeps the state through refused segment and manifest puts and checkpoints beside compactions (${name})`, async () => {
      const r = testRandom(`changed-keys spares ${name}`);
      const inner = new MemoryStore();
      let failing = 0;
      const store = failWhen(inner, (call, key) =>
        call === "put" && (key.startsWith("seg/") || key.startsWith("manifest/")) && r.random() < failing
          ? new StoreUnavailableError("put", key, new Error("refused by the test"))
          : undefined,
      );
      const opts: EngineOptions = {
        checkpointWalObjects: 0,
        checkpointWalBytes: 0,
        maxSegmentRuns: 2,
        retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
        onBackgroundError: () => {},
        ...(paging === undefined ? {} : { pageValues: paging }),
      };
      const engine = await Engine.open(store, opts);
      const model: Model = new Map();
      const taken = ChangedKeysSpares.taken;
      let failed = 0;
      for (let round = 0; round < 30; round++) {
        failing = round % 3 === 1 ? 0.35 : 0;
        const commits: Promise<void>[] = [];
        for (let c = 0; c < 3; c++) {
          const b = new WriteBatch();
          for (let i = 0; i < 60; i++) {
            const key = keyOf(r.int(SPACE));
            if (r.int(4) === 0) {
              b.delete(key);
              model.delete(key);
            } else {
              const value = `${round}.${c}.${i}`;
              b.put(key, enc(value));
              model.set(key, value);
            }
          }
          commits.push(engine.commit(b));
          // Checkpoints started among the commits: a second one while the first (a compaction, when due) runs.
          if (r.int(2) === 0) commits.push(engine.checkpoint().catch(() => void failed++));
        }
        await Promise.all(commits);
        await engine.checkpoint().catch(() => void failed++);
        const got = await contents(engine);
        if (JSON.stringify(sorted(got)) !== JSON.stringify(sorted(model))) expect(sorted(got), `round ${round}`).toEqual(sorted(model));
      }
      failing = 0;
      expect(failed, "some checkpoints failed part way").toBeGreaterThan(0);
      expect(ChangedKeysSpares.taken - taken, "cuts made from spares").toBeGreaterThan(0);
      expect(engine.stats.compactions).toBeGreaterThan(0);
      await engine.close();
      const again = await Engine.open(inner, opts);
      expect(sorted(await contents(again))).toEqual(sorted(model));
      await again.close();
    });
  }
});
