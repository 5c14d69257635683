/**
 * @module The open that claims first (open-writer.ts) attacked with real
 * processes over one directory: a writer checkpointing without pause while a
 * second process opens the same store. The second must open (the first is
 * then fenced and stops), and SIGKILL at seeded random moments of the second
 * one's start (before, during or after its claim and load) must lose nothing:
 * every batch either writer reported durable is in the reopened state, no
 * batch half applied, no stale marker, and the next writer opens over
 * whatever claim the killed one left.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Engine, LocalStore } from "taquba";
import { ChildScenario } from "../support/child-scenario.js";
import { startScript } from "../support/child-script.js";
import { expectCrashState } from "../support/crash-state.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { durableIds } from "../support/crash-output.js";
import { useTempDirs } from "../support/temp-dirs.js";

const fixture = fileURLToPath(new URL("./fixtures/busy-checkpoint-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-busy-kill-");

const epochOf = (lines: readonly string[]) => Number(lines.find((l) => l.startsWith("O "))?.slice(2) ?? Number.NaN);

describe("a take-over of a writer that checkpoints without pause, attacked with SIGKILL", () => {
  it(
    "the second process opens and fences the first; killed at random points of its start, nothing durable is lost",
    { timeout: loadLimitTimeout(60_000) },
    () =>
      withinLoadLimit(60_000, async () => {
        const dir = await tempDir();
        const { int } = testRandom("busy take-over kill");
        const scenario = new ChildScenario(55_000);
        const allDurable: string[] = [];
        try {
          for (let round = 0; round < 3; round++) {
            const first = scenario.track(`a${round}`, startScript(fixture, [dir, `a${round}`, "2"]));
            await scenario.line(`a${round}`, first, (l) => l.startsWith("C ") && Number(l.slice(2)) >= 5, "five checkpoints of the first writer", 25_000);
            const second = scenario.track(`b${round}`, startScript(fixture, [dir, `b${round}`, "2"]));
            if (round === 0) {
              // Left to open: it must, in bounded time, however often the first one checkpoints.
              await scenario.line(`b${round}`, second, (l) => l.startsWith("D "), "the second writer's first durable batch", 25_000);
              expect(epochOf(second.lines)).toBeGreaterThan(epochOf(first.lines));
              // The first writer's next manifest (it checkpoints all the time) meets the claim: fenced, it stops.
              const exit = await first.exited;
              expect(exit.code).toBe(3);
              expect(first.lines.find((l) => l.startsWith("X "))).toBe("X FencedError");
            } else {
              // Killed at a drawn moment of its start: before it claimed, between its claim and its load, or after.
              await new Promise((r) => setTimeout(r, int(2500)));
            }
            await second.kill();
            await first.kill();
            allDurable.push(...durableIds(first.lines), ...durableIds(second.lines));
            const engine = await Engine.open(new LocalStore(dir));
            try {
              expectCrashState(engine, allDurable, `a${round}`);
              expectCrashState(engine, allDurable, `b${round}`);
            } finally {
              await engine.close();
            }
          }
        } finally {
          await scenario.stop();
        }
        expect(allDurable.length).toBeGreaterThan(30);
      }),
  );
});
