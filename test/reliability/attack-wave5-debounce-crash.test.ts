/**
 * @module Debounced runs across a SIGKILL: a process submitting runs of one
 * debounce key is killed at a random point, between a supersession and the
 * successor's first claim, or part way through a submission. The next
 * owner finds exactly one run waiting in the window, every answered
 * submission either that run or superseded by the one after it, and once
 * the window ends exactly that run runs, once.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";

const script = fileURLToPath(new URL("./fixtures/debounce-submitter.ts", import.meta.url));
const tempDir = useTempDirs("attack-debounce-crash-");
const T0 = 1_700_000_000_000;
const dec = new TextDecoder();

describe("attack: debounced runs across a SIGKILL", () => {
  it(
    "one run waits in the window after the kill, each answered one is it or names its successor, and it alone runs",
    {
      timeout: loadLimitTimeout(120_000),
    },
    () =>
      withinLoadLimit(120_000, async () => {
        const { seed, random } = testRandom("debounce crash");
        console.log(`debounce crash: seed ${seed} (TAQUBA_TEST_SEED replays it)`);
        for (let round = 0; round < 3; round++) {
          const dir = await tempDir();
          const child = startScript(script, [dir, String(T0)]);
          const killAfter = 1 + Math.floor(random() * 40);
          await child.waitFor((lines) => lines.length >= killAfter);
          expect((await child.kill()).signal, child.stderr()).toBe("SIGKILL");
          expect(backgroundFailures(child)).toEqual([]);
          const answered = child.lines.filter((l) => l.startsWith("d-"));
          expect(answered.length).toBeGreaterThanOrEqual(killAfter);

          const ran: string[] = [];
          const clock = new MockClock(T0 + 10);
          const store = new LocalStore(dir);
          const queue = await Queue.open(store, "wf", { clock, flushIntervalMs: 1 });
          const runtime = WorkflowRuntime.builder(
            queue,
            store,
            { runStep: async (s) => (ran.push(dec.decode(s.payload)), StepOutcome.succeed(s.payload)) },
            NoopTerminalHook,
          ).build();
          // Submissions were made in order: the first unanswered one may have committed before the kill, none after it.
          const ids = [...answered, `d-${answered.length}`];
          const waiting: string[] = [];
          for (const [i, id] of ids.entries()) {
            const s = await runtime.status(id);
            if (i === ids.length - 1 && s === null) continue;
            expect(s, `${id} (answered: ${answered.length})`).not.toBeNull();
            if (s!.state !== "terminated") {
              waiting.push(id);
              continue;
            }
            expect(s, id).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: ids[i + 1] });
          }
          expect(waiting, "runs waiting in the window").toHaveLength(1);
          expect(ids.indexOf(waiting[0]!), "the last submission that committed waits").toBeGreaterThanOrEqual(answered.length - 1);
          const worker = runtime.spawn();
          clock.advance(1000);
          expect((await runtime.wait(waiting[0]!)).termination.status).toBe("succeeded");
          await until("no other step runs", async () => ran.length >= 1);
          expect(ran).toEqual(waiting);
          await worker.shutdown();
          await queue.close();
        }
      }),
  );
});
