/**
 * @module A store whose puts contend with each other (a local disk) gets
 * every commit of a stored WAL object released at once, however long the
 * put took: a slow put does not switch it to the release by groups, which
 * would send about twice the puts per commit and keep the disk busier. The
 * mark reaches the engine through the wrappers that add no latency, and
 * not through `withLatency`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Engine, LocalStore, MemoryStore, withCounting, withFaults, withLatency } from "taquba";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { RELEASE_GROUP } from "../../runtime/engine/wal-writer.js";
import { everyPutSlow } from "../support/every-put-slow.js";
import { declarePutsContend, putsContend } from "../../runtime/store/put-contention.js";
import { GatedStore } from "../support/gated-store.js";
import { WAVE, heldWave } from "../support/held-wave.js";

/**
 * WAVE commits in one WAL object held until its release; each continuation notes how many WAL puts were
 * held when it ran, then commits again. Returns those counts and the WAL puts made in all.
 */
async function releaseOneWave(contend: boolean): Promise<{ sentWhenRun: number[]; walPuts: number }> {
  const gated = new GatedStore(new MemoryStore());
  if (contend) declarePutsContend(gated);
  // A long flush window: follow-ups leave because a release seals them, not because a window ended. One
  // cohort: the wave's follow-ups stay together (engine-wal-cohorts.test.ts splits them).
  const engine = await Engine.open(gated, { flushIntervalMs: 10_000, walCohorts: 1 });
  gated.hold = (k) => k.startsWith("wal/");
  const { commits, sentWhenRun, followUps } = await heldWave(engine, gated);
  gated.release(gated.held[0]!.key);
  await Promise.all(commits);
  gated.hold = () => false;
  for (const h of [...gated.held]) gated.release(h.key);
  await Promise.all(followUps);
  const walPuts = engine.stats.walPuts;
  await engine.close();
  return { sentWhenRun, walPuts };
}

describe("WAL release over a store whose puts contend", () => {
  // Every put counts as slow: without the mark, releases go by groups.
  everyPutSlow();

  it("releases every commit of a slow object at once, and their next commits leave in one object", async () => {
    const { sentWhenRun, walPuts } = await releaseOneWave(true);
    expect(sentWhenRun).toEqual(Array.from({ length: WAVE }, () => 0));
    expect(walPuts).toBe(2);
  });

  it("releases by groups over a store not so declared (the same wave)", async () => {
    const { sentWhenRun, walPuts } = await releaseOneWave(false);
    expect(sentWhenRun).toEqual(Array.from({ length: WAVE }, (_, i) => Math.floor(i / RELEASE_GROUP)));
    expect(walPuts).toBe(4);
  });

  describe("which stores carry the mark", () => {
    const dirs: string[] = [];
    afterEach(() => {
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    });
    const local = () => {
      const dir = mkdtempSync(join(tmpdir(), "taquba-contend-"));
      dirs.push(dir);
      return new LocalStore(dir);
    };

    it("a LocalStore, and the wrappers that add no latency around one", () => {
      expect(putsContend(local())).toBe(true);
      expect(putsContend(withCounting(local()))).toBe(true);
      expect(putsContend(withFaults(local(), { failureRate: 0 }))).toBe(true);
      expect(putsContend(new PrefixedStore(withCounting(local()), "q/"))).toBe(true);
    });

    it("not a MemoryStore, nor a LocalStore behind withLatency", () => {
      expect(putsContend(new MemoryStore())).toBe(false);
      expect(putsContend(new PrefixedStore(new MemoryStore(), "q/"))).toBe(false);
      expect(putsContend(withLatency(local(), { ms: 20 }))).toBe(false);
    });
  });
});
