/**
 * Time injection: a week of workflow time in a fraction of a second.
 *
 * Shows: a `MockClock` passed to `Queue.open` drives every time-based
 * decision of the queue and the runtime in lockstep, so `clock.advance`
 * makes a `continueAfter` delay elapse, and ages terminated runs for
 * `memoRetention`. Here a trial-reminder run waits three days between
 * steps; once it ends, its memo entries, outcome record and terminal
 * record are kept for the retention window (two days) and then swept.
 * With `stepOutputReplay` on, every outcome the runner returns is recorded
 * before it is applied, so a step redelivered after a crash replays it
 * instead of running again; the sweep removes those records too.
 *
 * This is how tests of time-dependent workflows run, without waiting out
 * the delays.
 *
 * Run: npx tsx examples/time-injection.ts
 */
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

const DAY = 24 * 3600_000;
const start = Date.UTC(2026, 0, 1);
const clock = new MockClock(start);
const day = () => `day ${((clock.now() - start) / DAY).toFixed(1)}`;

let stepsRun = 0;
let stepDone: () => void = () => undefined;
const nextStep = () => new Promise<void>((r) => (stepDone = r));

const trial: StepRunner = {
  async runStep(step) {
    stepsRun++;
    const email = await step.memo.memoized("email", async () => `email-${step.stepNumber}-to-${new TextDecoder().decode(step.payload)}`);
    console.log(`${day()}: step ${step.stepNumber} sent ${email}`);
    setImmediate(stepDone);
    if (step.stepNumber === 0) return StepOutcome.continueAfter(step.payload, 3 * DAY);
    return StepOutcome.succeed(new TextEncoder().encode("trial reminders sent"));
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "trials", { clock });
const runtime = WorkflowRuntime.builder(queue, store, trial, NoopTerminalHook)
  .memoRetention(2 * DAY)
  .stepOutputReplay()
  .build();
const worker = runtime.spawn();

let stepped = nextStep();
await runtime.submit({ runId: "trial-ada", input: new TextEncoder().encode("ada@example.com") });
await stepped;
stepped = nextStep();
console.log(`${day()}: status ${JSON.stringify(await runtime.status("trial-ada"))}`);

clock.advance(3 * DAY - 1);
await new Promise((r) => setTimeout(r, 50)); // real time for the worker to run step 1, were it due
console.log(`${day()}: one millisecond early, ${stepsRun} step run so far`);
clock.advance(1);
await stepped;
const end = await runtime.wait("trial-ada");
console.log(`${day()}: run ${end.termination.status}; outcome kept: ${(await runtime.outcome("trial-ada")) !== null}`);

clock.advance(2 * DAY);
// The runtime's own sweep loop wakes on the advance too; sweepMemos() makes sure one pass ran now.
await runtime.sweepMemos();
console.log(
  `${day()}: retention window over: outcome kept: ${(await runtime.outcome("trial-ada")) !== null}, status ${JSON.stringify(await runtime.status("trial-ada"))}`,
);

await worker.shutdown();
await queue.close();
console.log(`time-injection done: 5 days of workflow time, ${stepsRun} steps`);
