/**
 * @module An engine committing keys that carry their family's head
 * (key-family.ts: the queue's kept keys and key prefixes) beside plain
 * ones: through freezes (a frozen memtable's kills), a declaration of heads
 * that splits a family mid-way, a key whose op was changed after it was
 * made, and a reopen, reads with and without the hint answer as a model
 * does, and the reopened state (no hints) holds the same entries.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { commitOwned } from "../../runtime/engine/engine.js";
import { KeyFamily } from "../../runtime/engine/key-family.js";
import { testRandom } from "../support/seed.js";

const FAMILIES = ["u/workflow/runs/", "u/workflow/runs/q/", "u/workflow/", "u/workflow/steps/q/01J", "u/", "v/"];

function snapshot(engine: Engine): [string, number][] {
  return [...engine.scan()].map(([k, v]) => [k, v[0]!]);
}

function sorted(model: Map<string, number>): [string, number][] {
  return [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

describe("headed keys in an engine", () => {
  it("reads and writes them as plain keys through freezes, a declaration that splits a family, and a reopen", async () => {
    const r = testRandom("engine headed keys");
    const store = new MemoryStore();
    const engine = await Engine.open(store, { memtableKeys: 1024, keyHeads: ["u/workflow/runs/", "u/workflow/steps/"] });
    const families = FAMILIES.map((p) => new KeyFamily(p));
    const model = new Map<string, number>();
    for (let round = 0; round < 60; round++) {
      if (round === 30) engine.declareKeyHeads(["u/workflow/runs/q/0", "u/workflow/history/"]);
      for (let c = 0; c < 20; c++) {
        const batch = new WriteBatch();
        const made = [];
        for (let i = 0; i < 1 + r.int(5); i++) {
          const k = families[r.int(families.length)]!.key(String(r.int(900)).padStart(3, "0"));
          made.push(k);
          const v = r.int(256);
          if (r.int(4) === 0) {
            if (r.int(2) === 0) batch.deleteHeaded(k);
            else batch.delete(k.key);
            model.delete(k.key);
          } else {
            if (r.int(4) === 0) batch.put(k.key, new Uint8Array([v]));
            else batch.putHeaded(k, new Uint8Array([v]));
            model.set(k.key, v);
          }
        }
        await commitOwned(engine, batch.ops, []);
        for (const k of made) {
          expect(engine.getHeaded(k)?.[0]).toBe(model.get(k.key));
          expect(engine.get(k.key)?.[0]).toBe(model.get(k.key));
          expect(engine.valueTokenHeaded(k)).toBe(engine.valueToken(k.key));
        }
      }
      expect(snapshot(engine)).toEqual(sorted(model));
    }
    expect(engine.stats.memtableFreezes).toBeGreaterThan(0);
    await engine.close();
    const reopened = await Engine.open(store, { memtableKeys: 1024, keyHeads: ["u/workflow/runs/"] });
    expect(snapshot(reopened)).toEqual(sorted(model));
    for (const f of families) {
      const k = f.key("000");
      expect(reopened.getHeaded(k)?.[0]).toBe(model.get(k.key));
    }
    await reopened.close();
  });

  it("places an op whose key was changed after its headed key was made by the search: reads and a reopen find it", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { keyHeads: ["u/workflow/runs/", "u/workflow/steps/"] });
    const runs = new KeyFamily("u/workflow/runs/");
    const k = runs.key("q/1");
    const batch = new WriteBatch().putHeaded(k, new Uint8Array([1]));
    const op = batch.ops[0]!;
    op.key = "u/workflow/steps/q/1";
    await commitOwned(engine, batch.ops, []);
    expect(engine.get("u/workflow/steps/q/1")?.[0]).toBe(1);
    expect(engine.getHeaded(k)).toBeUndefined();
    expect(snapshot(engine)).toEqual([["u/workflow/steps/q/1", 1]]);
    await engine.close();
    const reopened = await Engine.open(store, { keyHeads: ["u/workflow/runs/", "u/workflow/steps/"] });
    expect(snapshot(reopened)).toEqual([["u/workflow/steps/q/1", 1]]);
    await reopened.close();
  });
});
