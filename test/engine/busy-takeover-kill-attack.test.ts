/**
 * @module The open that claims first (open-writer.ts) attacked with real
 * processes over one directory: a writer checkpointing without pause while a
 * second process opens the same store. The second must open (the first is
 * then fenced and stops). Killed inside its claim's manifest put (see
 * kill-in-put.ts), half way through the write, the second leaves no claim and
 * the first goes on checkpointing; killed once the claim is under its name,
 * before its load, the claim fences the first. Either way nothing is lost:
 * every batch either writer reported durable is in the reopened state, no
 * batch half applied, no stale marker, and the next writer opens over
 * whatever claim the killed one left.
 *
 * Each wait is bounded by the CPU time of the process it waits on, not by
 * wall time: a writer that spins (an open retrying against the checkpoints
 * for ever, a fenced writer that goes on checkpointing) spends its budget
 * at any load, while one that the shared cores run slowly does not. The
 * scenario's deadline, stretched by the load, only catches a hang.
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Engine, LocalStore } from "taquba";
import { ChildScenario } from "../support/child-scenario.js";
import { type ChildScript, startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { expectCrashState } from "../support/crash-state.js";
import { loadLimitTimeout } from "../support/load.js";
import { claimPlace, durableIds, lastCount } from "../support/crash-output.js";
import { type KillInPut, killInPutEnv } from "../support/kill-in-put.js";
import { useTempDirs } from "../support/temp-dirs.js";

const fixture = fileURLToPath(new URL("./fixtures/busy-checkpoint-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-busy-kill-");

/**
 * The CPU time a writer may spend on one step of the scenario (a start to
 * its fifth checkpoint, an open, a kill in its claim, being fenced): each
 * takes under 3 s of its CPU when the cores are busy.
 */
const STEP_CPU_MS = 15_000;
const cpuOf = (script: ChildScript) => ({ cpuMs: STEP_CPU_MS, of: script });
/** The scenario's deadline before the load stretches it: a guard against a hang, not a bound on any step. */
const SCENARIO_MS = 60_000;

const epochOf = (lines: readonly string[]) => Number(lines.find((l) => l.startsWith("O "))?.slice(2) ?? Number.NaN);

/** Starts a second writer that kills itself in its claim (its first manifest put) at `window`. */
function startKilledInClaim(dir: string, tag: string, window: KillInPut["window"]) {
  const kill = killInPutEnv({ window, dirName: "manifest%2F", nth: 1 });
  return startScript(fixture, [dir, tag, "2"], { env: { ...process.env, TAQUBA_TEST_KILL_IN_PUT: kill } });
}

/** Waits for a writer that kills itself, and checks it died in `window`. */
async function expectKilledIn(scenario: ChildScenario, tag: string, script: ReturnType<typeof startScript>, window: string): Promise<void> {
  // Through the scenario, so a writer that never reaches its kill fails the test with its output instead of hanging.
  await scenario
    .line(tag, script, (l) => l.startsWith("K "), `${tag}'s kill in its claim`, cpuOf(script))
    .catch(async (err: unknown) => {
      if (!script.lines.some((l) => l.startsWith("K "))) throw err;
    });
  const exit = await script.exited;
  expect(exit.signal, script.stderr()).toBe("SIGKILL");
  expect(script.lines.find((l) => l.startsWith("K "))?.split(" ")[1]).toBe(window);
  expect(durableIds(script.lines)).toEqual([]);
  expect(backgroundFailures(script)).toEqual([]);
}

describe("a take-over of a writer that checkpoints without pause, attacked with SIGKILL", () => {
  it("the second process opens and fences the first; killed inside its claim, nothing durable is lost", {
    timeout: loadLimitTimeout(SCENARIO_MS),
  }, async () => {
    const dir = await tempDir();
    const scenario = ChildScenario.stretchedByLoad(SCENARIO_MS);
    const allDurable: string[] = [];
    const reopenAndCheck = async (tags: string[]) => {
      const engine = await Engine.open(new LocalStore(dir));
      try {
        for (const tag of tags) expectCrashState(engine, allDurable, tag);
      } finally {
        await engine.close();
      }
    };
    try {
      // Left to open: it must, in bounded time, however often the first one checkpoints.
      const a0 = scenario.track("a0", startScript(fixture, [dir, "a0", "2"]));
      await scenario.line("a0", a0, (l) => l.startsWith("C ") && Number(l.slice(2)) >= 5, "five checkpoints of the first writer", cpuOf(a0));
      const b0 = scenario.track("b0", startScript(fixture, [dir, "b0", "2"]));
      await scenario.line("b0", b0, (l) => l.startsWith("D "), "the second writer's first durable batch", cpuOf(b0));
      expect(epochOf(b0.lines)).toBeGreaterThan(epochOf(a0.lines));
      // The first writer's next manifest (it checkpoints all the time) meets the claim: fenced, it stops.
      const exit = await scenario.exit("a0", a0, cpuOf(a0));
      expect(exit.code).toBe(3);
      expect(a0.lines.find((l) => l.startsWith("X "))).toBe("X FencedError");
      await b0.kill();
      // Fenced, the first writer fails its commits, not its background work.
      expect([a0, b0].flatMap(backgroundFailures)).toEqual([]);
      allDurable.push(...durableIds(a0.lines), ...durableIds(b0.lines));
      await reopenAndCheck(["a0", "b0"]);

      const a1 = scenario.track("a1", startScript(fixture, [dir, "a1", "2"]));
      await scenario.line("a1", a1, (l) => l.startsWith("C ") && Number(l.slice(2)) >= 5, "five checkpoints of the first writer", cpuOf(a1));
      // Killed half way through writing its claim: no claim is visible, so the first is not fenced and
      // goes on publishing manifests (each of which would meet a claim).
      await expectKilledIn(scenario, "b1", scenario.track("b1", startKilledInClaim(dir, "b1", "torn-write")), "torn-write");
      const published = lastCount(a1.lines, "C");
      await scenario.line("a1", a1, (l) => l.startsWith("C ") && Number(l.slice(2)) >= published + 3, "checkpoints after the torn claim", cpuOf(a1));
      expect(a1.lines.some((l) => l.startsWith("X "))).toBe(false);
      // Killed with its claim under its name, before its load: the claim alone fences the first writer. Unless
      // the first writer moved more than three manifests on while the second read its base, and deleted the
      // number its claim took: that claim lands below the newest, where nothing reads it (seen at load 50), and
      // the first writer goes on. Such a claim is checked as that, and another second writer is killed.
      for (let attempt = 2; ; attempt++) {
        const tag = `b${attempt}`;
        const killed = scenario.track(tag, startKilledInClaim(dir, tag, "after-link"));
        await expectKilledIn(scenario, tag, killed, "after-link");
        const claim = await readFile(killed.lines.find((l) => l.startsWith("K "))!.split(" ")[2]!);
        if ((await claimPlace(new LocalStore(dir), claim)) === "newest") break;
        expect(attempt, "claims killed after landing below the first writer's newest manifest").toBeLessThan(6);
        const before = lastCount(a1.lines, "C");
        await scenario.line("a1", a1, (l) => l.startsWith("C ") && Number(l.slice(2)) >= before + 3, `checkpoints after ${tag}'s claim below`, cpuOf(a1));
        expect(a1.lines.some((l) => l.startsWith("X "))).toBe(false);
      }
      const fenced = await scenario.exit("a1", a1, cpuOf(a1));
      expect(fenced.code).toBe(3);
      expect(a1.lines.find((l) => l.startsWith("X "))).toBe("X FencedError");
      allDurable.push(...durableIds(a1.lines));
      expect(backgroundFailures(a1)).toEqual([]);
      // The next writer opens over the claim the killed one left.
      await reopenAndCheck(["a0", "b0", "a1"]);
    } finally {
      await scenario.stop();
    }
    expect(allDurable.length).toBeGreaterThan(30);
  });
});
