/**
 * Crash and resume: a three-step run over a local directory, killed with
 * SIGKILL in the middle of a step and resumed by a fresh process.
 *
 * Shows: a run resumes at its last committed step (the steps before it are
 * not run again), and the interrupted step, delivered again, reuses the
 * memo entries its first delivery wrote (`step.memo.memoized`) instead of
 * repeating the work. Open-time recovery makes the dead process's claim
 * claimable at once, without waiting for its lease to expire.
 *
 * The example runs itself: this process starts a worker process, kills it
 * while the second step's call for its second chunk hangs (its first chunk
 * memoized), then starts a second worker process over the same directory
 * that finishes the run. Hanging there puts the kill at the same point on
 * every run; the test suite's crash tests kill at random points.
 *
 * Run: npx tsx examples/crash-resume.ts
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type Step, type StepRunner } from "taquba";

const STAGES = ["fetch", "transform", "publish"] as const;
const CHUNKS = 3;
const RUN_ID = "nightly-report";
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => new TextDecoder().decode(b);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each step processes its chunks one by one, memoizing each; the payload carries the digest so far. */
function stagedRunner(say: (line: string) => void, hangAt?: { step: number; chunk: number }): StepRunner {
  return {
    async runStep(step: Step) {
      const stage = STAGES[step.stepNumber]!;
      const parts: string[] = [];
      for (let chunk = 1; chunk <= CHUNKS; chunk++) {
        let computed = false;
        const value = await step.memo.memoized(`chunk-${chunk}`, async () => {
          computed = true;
          if (hangAt?.step === step.stepNumber && hangAt.chunk === chunk) {
            say(`step ${step.stepNumber} ${stage}: chunk ${chunk}/${CHUNKS} call hangs`);
            await new Promise(() => undefined);
          }
          await sleep(120); // an expensive call
          return `${stage[0]}${chunk}`;
        });
        say(
          `step ${step.stepNumber} ${stage}: chunk ${chunk}/${CHUNKS} ${computed ? "computed and memoized" : "reused from memo (computed before the crash)"}`,
        );
        parts.push(value);
      }
      const digest = `${dec(step.payload)}${parts.join("")}|`;
      return step.stepNumber + 1 < STAGES.length ? StepOutcome.continueNow(enc(digest)) : StepOutcome.succeed(enc(digest));
    },
  };
}

/** A worker process: opens the directory, resumes or submits the run, works until it ends. */
async function workerProcess(dir: string, n: number): Promise<void> {
  const say = (line: string) => console.log(`[process ${n}] ${line}`);
  const store = new LocalStore(dir);
  const queue = await Queue.open(store, "crash-resume");
  if (queue.recovery.requeued.length > 0) say(`recovery at open: ${queue.recovery.requeued.length} interrupted step claimable again`);
  const runtime = WorkflowRuntime.builder(queue, store, stagedRunner(say, n === 1 ? { step: 1, chunk: 2 } : undefined), NoopTerminalHook).build();
  const status = await runtime.status(RUN_ID);
  if (status === null) {
    await runtime.submit({ runId: RUN_ID, input: enc("") });
    say(`submitted run ${RUN_ID}`);
  } else if (status.state !== "terminated") {
    for (let s = 0; s < status.step; s++) say(`step ${s} ${STAGES[s]}: skipped, committed before the crash`);
    say(`run ${RUN_ID} resumes at step ${status.step} ${STAGES[status.step]}`);
  }
  const worker = runtime.spawn();
  const end = await runtime.wait(RUN_ID);
  say(`run ${RUN_ID} ${end.termination.status} with result ${dec(end.outcome?.result)}`);
  await worker.shutdown();
  await queue.close();
}

if (process.argv[2] === "--worker") {
  await workerProcess(process.argv[3]!, Number(process.argv[4]));
  process.exit(0);
}

const dir = await mkdtemp(join(tmpdir(), "taquba-crash-resume-"));
console.log(`state directory: ${dir}`);
const start = (n: number, onLine: (line: string) => void) => {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--worker", dir, String(n)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  createInterface({ input: child.stdout }).on("line", (line) => {
    console.log(line);
    onLine(line);
  });
  return { child, exited: new Promise<string>((resolve) => child.on("exit", (code, sig) => resolve(sig ?? String(code)))) };
};

let killed = false;
const first = start(1, (line) => {
  if (!killed && line.includes("call hangs")) {
    killed = true;
    first.child.kill("SIGKILL");
  }
});
const guard = setTimeout(() => first.child.kill("SIGKILL"), 20_000);
const firstEnd = await first.exited;
clearTimeout(guard);
if (!killed || firstEnd !== "SIGKILL") throw new Error(`process 1 ended with ${firstEnd} before reaching the kill point`);
console.log(`killed process 1 with SIGKILL during step 1, after its first chunk was memoized`);

const secondEnd = await start(2, () => undefined).exited;
await rm(dir, { recursive: true, force: true });
if (secondEnd !== "0") throw new Error(`process 2 ended with ${secondEnd}`);
console.log("crash-resume done: the run finished in a fresh process without repeating committed work");
