/**
 * @module Workflow runs across repeated SIGKILLs of the worker process: each
 * run ends exactly once, memoized side effects are observed once, and the
 * step queue's stats equal one done job per step: with more runs than the
 * worker's slots, and with fewer, where each step's ack claims the next.
 */
import { describe, expect, it } from "vitest";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalStore, MemoStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "taquba";
import { killLives, startScript } from "../support/child-script.js";
import { BACKGROUND_FAILURE_PREFIX, backgroundFailures } from "../support/background-errors.js";
import { scaledForLoad } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";

const script = fileURLToPath(new URL("./fixtures/crash-worker.ts", import.meta.url));
const STEPS = 5;
const KILLS = 5;
const tempDir = useTempDirs("wf-crash-");
// Six lives, each a child that loads the runtime through tsx (about 3 s of CPU to start): a guard
// against a hang, stretched by the load as the other crash tests' are (120 s ran out at a load of 18).
const LIMIT_MS = scaledForLoad(120_000);

/**
 * Runs `nRuns` five-step runs across repeated SIGKILLs of the worker (four
 * slots), each life killed up to `maxDelayMs` after its first new side
 * effect, then checks every run's outcome, its memoized effects, and the
 * step queue's stats against a model.
 */
async function crashAndCheck(nRuns: number, seedName: string, maxDelayMs: number): Promise<void> {
  const dir = await tempDir();
  const log = join(dir, "effects.log");
  const args = [dir, String(nRuns), log];
  const rng = testRandom(seedName);
  // Once a life performs a new side effect (a log line), it is killed at a random point.
  const kills = await killLives(script, args, {
    lives: KILLS,
    rng,
    maxDelayMs,
    progressed: (lines) => lines.some((l) => !l.startsWith(BACKGROUND_FAILURE_PREFIX)),
  });
  const last = startScript(script, args, { env: rng.childEnv() });
  expect((await last.exited).code, last.stderr()).toBe(0);
  expect(backgroundFailures(last)).toEqual([]);

  const store = new LocalStore(dir);
  const queue = await Queue.open(store, "wf");
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async () => StepOutcome.fail("unused") }, NoopTerminalHook).build();
  const memos = new MemoStore(store, "workflow-steps-memo");
  const lines = (await readFile(log, "utf8"))
    .trim()
    .split("\n")
    .map((l) => l.split(" "));
  let duplicates = 0;
  for (let r = 0; r < nRuns; r++) {
    const runId = `run-${r}`;
    const status = await runtime.status(runId);
    expect(status).toMatchObject({ state: "terminated", status: "succeeded", step: STEPS - 1 });
    const outcome = await runtime.outcome(runId);
    const result = new TextDecoder().decode(outcome!.result);
    const parts = result.split(";").filter(Boolean);
    // The run's own memos: those of its submission of the id.
    const memoSet = (await runtime.inspectRun(runId))?.memoSet;
    expect(memoSet).toBeDefined();
    expect(parts.map((p) => p.split("=")[0])).toEqual(["0", "1", "2", "3", "4"]);
    for (const p of parts) {
      const [step, nonce] = p.split("=") as [string, string];
      const logged = lines.filter(([id, s]) => id === runId && s === step).map(([, , n]) => n);
      // The nonce the run carried is the memoized one, and the side effect that produced it ran.
      expect(logged).toContain(nonce);
      // Every later delivery observed the memoized value: the one the run carried.
      const memo = await memos.newMemo(runId, Number(step), memoSet).memoized("effect", async () => "absent");
      expect(memo).toBe(nonce);
      duplicates += logged.length - 1;
    }
  }
  expect(kills).toBeGreaterThanOrEqual(3);
  // A computation re-runs only when a kill lands between its side effect and its memo
  // write, which at most the 4 steps running at the kill can be in.
  if (process.env.CRASH_TEST_DEBUG) console.log({ kills, logLines: lines.length, duplicates });
  expect(duplicates).toBeLessThanOrEqual(kills * 4);
  // Each step is one job, acked once whatever the kills did (a recovered claim is requeued as the same job): the
  // queue's counters, with the done jobs its claimed entries carried, equal that model.
  expect(await queue.view().stats("workflow-steps")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: nRuns * STEPS, dead: 0 });
  await queue.close();
}

describe("crash recovery", () => {
  it("every run reaches exactly one terminal outcome across repeated SIGKILLs, memoized effects observed once", { timeout: LIMIT_MS }, async () => {
    // More runs than slots: steps wait for one, so most settlements ack and the next step is claimed apart.
    await crashAndCheck(10, "workflow crash recovery", 120);
  });

  it("runs whose steps chain (fewer runs than slots) end once across SIGKILLs mid-chain, with the done jobs their claims carried counted", {
    timeout: LIMIT_MS,
  }, async () => {
    // Each continuing step's ack claims the next step in its commit, carrying the run's done count in its claimed entry.
    // A life started once every run ended exits unkilled: three runs end within about 120 ms, so the kills come sooner.
    await crashAndCheck(3, "workflow crash recovery of chained steps", 40);
  });
});
