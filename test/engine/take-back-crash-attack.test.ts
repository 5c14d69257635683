/**
 * @module The engine killed while its memtable takes young runs back: a
 * child writer whose memtable grows and shrinks between 16 and 128 keys
 * rewrites working sets pass after pass (each grow takes runs back),
 * deletes the last set's keys as it goes and checkpoints every few WAL
 * objects, and is SIGKILLed at a random point after a take-back, round
 * after round, values paged in every other round. Each reopen (writer and
 * reader) must hold exactly the batches up to some point at or past the
 * last one reported durable: nothing acknowledged lost, nothing half
 * applied, no deleted key back.
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
import { TAKE_BACK_RANGE, takeBackBatch } from "./fixtures/take-back-batches.js";

const fixture = fileURLToPath(new URL("./fixtures/take-back-crash-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-take-back-crash-");
const LIMIT_MS = scaledForLoad(180_000);
const PAGED = { pageValues: { keyPrefixes: ["w/"], minBytes: 64, cacheBytes: 4096 } } as const;

beforeAll(() => {
  stateTuning.memtableRange = TAKE_BACK_RANGE;
});
afterAll(() => {
  stateTuning.memtableRange = undefined;
});

const hex = (v: Uint8Array) => Buffer.from(v).toString("hex");

function apply(model: Map<string, string>, seed: number, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    for (const [k, v] of takeBackBatch(seed, i)) {
      if (v === undefined) model.delete(k);
      else model.set(k, hex(v));
    }
  }
}

async function dumpOf(db: Engine | EngineReader): Promise<string> {
  if (db instanceof Engine) {
    // Keys listed first: a value left paged in its segment must be warmed before any read.
    const keys = [...db.keys()];
    for (let p = db.warm(keys); p !== undefined; p = db.warm(keys)) await p;
  }
  return JSON.stringify([...db.scan()].map(([k, v]) => [k, hex(v)]));
}

const dumpModel = (model: Map<string, string>) => JSON.stringify([...model.keys()].sort(compareKeys).map((k) => [k, model.get(k)]));

describe("engine killed while its memtable takes young runs back", () => {
  it("holds exactly a prefix of the batches, at least every one reported durable, after each SIGKILL", { timeout: LIMIT_MS }, async () => {
    const r = testRandom("take-back crash");
    const dir = await tempDir();
    const seed = r.int(2 ** 31);
    const model = new Map<string, string>();
    let applied = 0;
    let takeBacks = 0;
    for (let round = 0; round < 4; round++) {
      const mode = round % 2 === 0 ? "" : "paged";
      const writer = startScript(fixture, [dir, String(seed), String(applied), ...(mode === "" ? [] : [mode])]);
      // Killed some batches after a take-back of this life, while the next ones (and checkpoints) run.
      const after = 1 + r.int(20);
      let seenAt = -1;
      await writer.waitFor((lines) => {
        if (seenAt < 0 && lines.some((l) => l.startsWith("T "))) seenAt = lines.filter((l) => l.startsWith("D ")).length;
        return seenAt >= 0 && lines.filter((l) => l.startsWith("D ")).length >= seenAt + after;
      });
      await new Promise((resolve) => setTimeout(resolve, r.int(20)));
      await writer.kill();
      expect(backgroundFailures(writer)).toEqual([]);
      takeBacks += writer.lines.filter((l) => l.startsWith("T ")).length;
      const lastDurable = Math.max(...writer.lines.filter((l) => l.startsWith("D ")).map((l) => Number(l.slice(2))));
      apply(model, seed, applied, lastDurable + 1);
      applied = lastDurable + 1;
      const engine = await Engine.open(new LocalStore(dir), mode === "" ? {} : PAGED);
      const got = await dumpOf(engine);
      let matched = got === dumpModel(model);
      // Up to the batches that were in flight (4 at most) may have landed too.
      for (let extra = 1; extra <= 4 && !matched; extra++) {
        apply(model, seed, applied, applied + 1);
        applied++;
        matched = got === dumpModel(model);
      }
      expect(matched, `round ${round}: the reopened state is no prefix of the batches at or past ${lastDurable}`).toBe(true);
      await engine.close();
      const reader = await EngineReader.open(new LocalStore(dir));
      expect(await dumpOf(reader)).toBe(got);
      await reader.close();
    }
    expect(takeBacks).toBeGreaterThanOrEqual(4);
  });
});
