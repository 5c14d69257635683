/**
 * @module The engine over compact key runs killed mid-fill: a child writer
 * with a memtable of a few keys commits batches of edge keys and values
 * (runs-batches.ts) and is SIGKILLed at a random point, repeatedly, while
 * it freezes, merges and rewrites runs, checkpoints and compacts. Each
 * reopen must hold exactly the batches up to some point at or past the
 * last one reported durable: nothing lost, nothing half applied, no
 * deleted key back.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, EngineReader, LocalStore } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { scaledForLoad } from "../support/load.js";
import { crashBatch, crashKeys } from "./fixtures/runs-batches.js";

const fixture = fileURLToPath(new URL("./fixtures/runs-crash-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-runs-crash-");
// Each round starts a TypeScript child, which takes seconds on a loaded machine: a hang guard, stretched by the load.
const LIMIT_MS = scaledForLoad(120_000);

beforeAll(() => {
  stateTuning.memtableKeys = 16;
});
afterAll(() => {
  stateTuning.memtableKeys = undefined;
});

const hex = (v: Uint8Array) => Buffer.from(v).toString("hex");

/** The model after applying batches [from, to) of `seed` to `model`. */
function apply(model: Map<string, string>, seed: number, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    for (const [k, v] of crashBatch(seed, i)) {
      if (v === undefined) model.delete(k);
      else model.set(k, hex(v));
    }
  }
}

async function dumpOf(db: Engine | EngineReader): Promise<string> {
  if (db instanceof Engine) {
    // Listed without reading values: a value the open left paged in its segment must be warmed before any read.
    const keys = crashKeys.filter((k) => db.has(k));
    for (let p = db.warm(keys); p !== undefined; p = db.warm(keys)) await p;
  }
  return JSON.stringify([...db.scan()].map(([k, v]) => [k, hex(v)]));
}

const dumpModel = (model: Map<string, string>) => JSON.stringify([...model.keys()].sort(compareKeys).map((k) => [k, model.get(k)]));

describe("engine over compact key runs, killed mid-fill", () => {
  it("holds exactly a prefix of the batches, at least every one reported durable, after each SIGKILL (values paged by block in every other round)", {
    timeout: LIMIT_MS,
  }, async () => {
    const r = testRandom("engine runs crash");
    const dir = await tempDir();
    const seed = r.int(2 ** 31);
    const model = new Map<string, string>();
    let applied = 0;
    for (let round = 0; round < 3; round++) {
      const mode = round % 2 === 0 ? "" : "paged";
      const writer = startScript(fixture, [dir, String(seed), String(applied), ...(mode === "" ? [] : [mode])]);
      const target = 10 + r.int(round === 0 ? 80 : 40);
      await writer.waitFor((lines) => lines.filter((l) => l.startsWith("D ")).length >= target);
      // Real time on purpose: the kill must land at an arbitrary point of the writer's work.
      await new Promise((resolve) => setTimeout(resolve, r.int(30)));
      await writer.kill();
      expect(backgroundFailures(writer)).toEqual([]);
      const durable = writer.lines.filter((l) => l.startsWith("D ")).map((l) => Number(l.slice(2)));
      const lastDurable = Math.max(...durable);
      // Every batch up to the last durable one, then up to a few that were in flight.
      apply(model, seed, applied, lastDurable + 1);
      applied = lastDurable + 1;
      const engine = await Engine.open(new LocalStore(dir), mode === "" ? {} : { pageValues: { keyPrefixes: ["n/"], minBytes: 64, cacheBytes: 4096 } });
      const got = await dumpOf(engine);
      let matched = false;
      for (let extra = 0; extra <= 12 && !matched; extra++) {
        if (extra > 0) {
          apply(model, seed, applied, applied + 1);
          applied++;
        }
        matched = got === dumpModel(model);
      }
      expect(matched, `round ${round}: the reopened state is no prefix of the batches at or past ${lastDurable}`).toBe(true);
      await engine.close();
      const reader = await EngineReader.open(new LocalStore(dir));
      expect(await dumpOf(reader)).toBe(got);
      await reader.close();
    }
    expect(applied).toBeGreaterThanOrEqual(30);
  });
});
