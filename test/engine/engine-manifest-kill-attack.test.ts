/**
 * @module Three writer processes over one local directory, each killed with
 * SIGKILL right after one of its manifest puts landed and before it listed
 * the manifests (the listing that tells a writer whether a newer one fenced
 * it): the first writer is stalled (it stops itself with SIGSTOP right
 * after its second manifest put landed, before its listing) while a second takes over,
 * the second dies after a manifest put, the first resumes, fenced, and
 * dies after its next manifest put if it gets that far, a third takes over
 * and is killed at a random point. A reopen must hold every commit a
 * writer reported durable, no half batch, no deleted key back, and every
 * segment the newest manifest lists.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Engine, LocalStore } from "taquba";
import { ChildScenario } from "../support/child-scenario.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { expectCrashState } from "../support/crash-state.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { durableIds, lastCount, missingListedSegments } from "../support/crash-output.js";
import { useTempDirs } from "../support/temp-dirs.js";

const fixture = fileURLToPath(new URL("./fixtures/manifest-kill-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-manifest-kill-");

/**
 * The scenario; b dies right after its `bKillAt`th manifest put (at random
 * among its first three when undefined).
 */
function threeWriters(bKillAt?: number): Promise<void> {
  return withinLoadLimit(90_000, async () => {
    const { int } = testRandom("manifest kill");
    const bKill = bKillAt ?? 1 + int(3);
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const scenario = new ChildScenario(80_000);
    try {
      // The first writer checkpoints, then stalls (a paused machine) between its second manifest put
      // landing and its listing: it stops itself there, so every run reaches that window.
      const a = scenario.track("a", startScript(fixture, [dir, "a", "3", "-", "2"]));
      await scenario.until("a: stopped after its second manifest put", () => a.lines.includes("P 2"), 30_000);
      // The second takes over and dies right after one of its manifest puts (the first: its open's).
      const b = scenario.track("b", startScript(fixture, [dir, "b", "3", String(bKill)]));
      let bEnd: Awaited<typeof b.exited> | undefined;
      void b.exited.then((e) => {
        bEnd = e;
      });
      await scenario.until("b: killed after a manifest put", () => bEnd !== undefined, 30_000);
      expect(bEnd!.signal, `b: ${b.lines.filter((l) => !l.startsWith("D ")).join(" | ")}`).toBe("SIGKILL");
      // The first resumes, fenced, armed to die after its next manifest put: a commit fails first, or
      // a checkpoint's manifest lands and it dies before its listing.
      const aManifests = lastCount(a.lines, "M");
      process.kill(a.pid, "SIGUSR2");
      process.kill(a.pid, "SIGCONT");
      await scenario.until("a: fenced or dead", () => a.lines.some((l) => l.startsWith("F ")) || lastCount(a.lines, "M") > aManifests, 30_000);
      // Resumed before its listing, a listed the manifests and found b's (numbered past a's second): the window was reached.
      await scenario.until("a: its listing after the pause", () => a.lines.some((l) => l.startsWith("L ")), 30_000);
      expect(Number(a.lines.find((l) => l.startsWith("L "))!.slice(2))).toBeGreaterThan(2);
      await a.kill();
      // The third takes over after both and is killed at a random point of its own checkpoints.
      const c = scenario.track("c", startScript(fixture, [dir, "c", "3"]));
      const cManifests = 1 + int(3);
      await scenario.until("c: manifests", () => lastCount(c.lines, "M") >= cManifests, 30_000);
      await c.kill();
      expect([a, b, c].flatMap(backgroundFailures)).toEqual([]);
      expect(c.lines.filter((l) => l.startsWith("F "))).toEqual([]);
      const allDurable = [...durableIds(a.lines), ...durableIds(b.lines), ...durableIds(c.lines)];
      expect(allDurable.length).toBeGreaterThan(0);
      expect(await missingListedSegments(store)).toEqual([]);
      const engine = await Engine.open(store);
      try {
        expectCrashState(engine, allDurable, "c");
      } finally {
        await engine.close();
      }
    } finally {
      await scenario.stop();
    }
  });
}

describe("three writers killed between a manifest put and its listing", () => {
  it("lose nothing acknowledged, and the newest manifest's segments are all there", { timeout: loadLimitTimeout(90_000) }, () => threeWriters());

  // The newest manifest is then b's claim, built on a's: it lists the segment a wrote for it, which a
  // resumed before its listing must not delete (it did once, seen by chance before the pause was fixed).
  it("the same with b killed right after its open's manifest: a, resumed, deletes nothing b's manifest lists", { timeout: loadLimitTimeout(90_000) }, () =>
    threeWriters(1),
  );
});
