/**
 * @module Attacks on the garbage collection that runs after an incremental
 * checkpoint, with real child processes over a local directory: a writer
 * killed with SIGKILL part way through a collection's deletes (repeatedly,
 * at drawn points), and a writer whose collection is held, then stalled (SIGSTOP) while a
 * second process opens the same directory, commits and checkpoints, then
 * resumed (fenced at its next write) and its held deletes let go on. After each, a reopen
 * must hold every commit a writer reported durable, no half batch, no
 * deleted key back, and every object the newest manifest lists.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, type ObjectStore } from "taquba";
import { ChildScenario } from "../support/child-scenario.js";
import { type ChildScript, startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { expectReopenedCrashState } from "../support/crash-state.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { durableIds, lastCount, missingListedSegments } from "../support/crash-output.js";
import { useTempDirs } from "../support/temp-dirs.js";

const fixture = fileURLToPath(new URL("./fixtures/collect-crash-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-collect-crash-");

/** The checks of a reopen: the durable state, and nothing the newest manifest lists deleted. */
async function checkReopen(store: ObjectStore, allDurable: readonly string[], tag: string): Promise<void> {
  expect(await missingListedSegments(store)).toEqual([]);
  await expectReopenedCrashState(store, allDurable, tag);
}

/** A guard against a hang, stretched by the load; each wait on a writer is bounded by that writer's CPU time. */
const SCENARIO_MS = 50_000;
/** A writer's CPU to get to the line awaited (its start and a few checkpoints and collections: a few seconds on busy cores). */
const STEP_CPU_MS = 15_000;
const cpuOf = (script: ChildScript) => ({ cpuMs: STEP_CPU_MS, of: script });

describe("garbage collection after a checkpoint, attacked with real processes", () => {
  it("a writer killed part way through a collection's deletes loses nothing acknowledged, repeatedly", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { int } = testRandom("collection crash");
      const scenario = ChildScenario.stretchedByLoad(SCENARIO_MS);
      const allDurable: string[] = [];
      try {
        for (let round = 0; round < 3; round++) {
          const tag = `r${round}`;
          const writer = scenario.track(tag, startScript(fixture, [dir, tag, "3"]));
          // The first collections delete a few objects each: the kill lands among their deletes (announced, then slowed).
          const target = 2 + int(30);
          await scenario.line(tag, writer, (l) => l === `X ${target}`, `delete ${target} to start`, cpuOf(writer));
          await writer.kill();
          expect(backgroundFailures(writer)).toEqual([]);
          allDurable.push(...durableIds(writer.lines));
          await checkReopen(store, allDurable, tag);
        }
      } finally {
        await scenario.stop();
      }
      expect(allDurable.length).toBeGreaterThan(20);
    }),
  );

  it("an old writer's collection held across a take-over deletes nothing the new writer needs", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const scenario = ChildScenario.stretchedByLoad(SCENARIO_MS);
      try {
        const old = scenario.track("old", startScript(fixture, [dir, "old", "3", "hold"]));
        // Its first collection is held at its first delete; it commits until two more checkpoints queued a
        // newer collection behind it, then idles (no write of its own will tell it it was fenced).
        await scenario.line("old", old, (l) => l === "I", "to idle with its collection held", cpuOf(old));
        expect(old.lines.filter((l) => l.startsWith("F "))).toEqual([]);
        expect(backgroundFailures(old)).toEqual([]);
        // The old writer stalls (a paused machine) and a new one takes over meanwhile, checkpoints and compacts.
        // (A writer that goes on checkpointing every few milliseconds keeps changing the store under an open,
        // which then gives up with a retryable StoreUnavailableError.)
        process.kill(old.pid, "SIGSTOP");
        const next = scenario.track("new", startScript(fixture, [dir, "new", "3"]));
        await scenario.until("new: three checkpoints", () => lastCount(next.lines, "C") >= 3, cpuOf(next));
        // The new writer stalls in turn (so no checkpoint of its own replaces what the old collection might
        // delete), and the old one resumes: its held deletes and the collection queued behind them go on,
        // listing the store as the new writer left it.
        process.kill(next.pid, "SIGSTOP");
        const startedWhenHeld = lastCount(old.lines, "X");
        process.kill(old.pid, "SIGCONT");
        process.kill(old.pid, "SIGUSR2");
        await scenario.line("old", old, (l) => l.startsWith("Q "), "its held deletes and the queued collection to end", cpuOf(old));
        await next.kill();
        await old.kill();
        // The queued collection ran after the take-over (it listed the store as the new writer left it), and the held
        // deletes went on. How many it deleted is the new writer's doing: its own collection may have got there first.
        expect(lastCount(old.lines, "Q")).toBeGreaterThanOrEqual(1);
        expect(lastCount(old.lines, "Y")).toBeGreaterThanOrEqual(startedWhenHeld);
        expect(next.lines.filter((l) => l.startsWith("F "))).toEqual([]);
        expect(backgroundFailures(next)).toEqual([]);
        // The old writer, resumed after the take-over, finishes its collections without a failure either.
        expect(backgroundFailures(old)).toEqual([]);
        const allDurable = [...durableIds(old.lines), ...durableIds(next.lines)];
        expect(durableIds(old.lines).length).toBeGreaterThan(0);
        await checkReopen(store, allDurable, "new");
      } finally {
        await scenario.stop();
      }
    }),
  );
});
