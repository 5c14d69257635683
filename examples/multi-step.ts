/**
 * Multi step: a counter loop driven by `StepOutcome.continueNow` until
 * `StepOutcome.succeed`.
 *
 * Shows: each step's payload is the durable channel to the next step (the
 * runtime commits it with the step's settlement), `step.stepNumber` counts
 * the steps, `StepOutcome.continueAfter` delays a step without holding a
 * worker, and `runtime.status` reports where a run stands while it runs.
 *
 * Run: npx tsx examples/multi-step.ts
 */
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array | undefined): T => JSON.parse(new TextDecoder().decode(b)) as T;

interface Counter {
  count: number;
  target: number;
}

/** Adds one per step; the step after every third waits 50 ms (a scheduled step, no worker held). */
const counter: StepRunner = {
  async runStep(step) {
    const c = dec<Counter>(step.payload);
    const next = { ...c, count: c.count + 1 };
    console.log(`run ${step.runId} step ${step.stepNumber}: count ${c.count} -> ${next.count}`);
    if (next.count >= c.target) return StepOutcome.succeed(enc(next));
    return next.count % 3 === 0 ? StepOutcome.continueAfter(enc(next), 50) : StepOutcome.continueNow(enc(next));
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "multi-step");
const runtime = WorkflowRuntime.builder(queue, store, counter, NoopTerminalHook).build();
const worker = runtime.spawn();

const { runId } = await runtime.submit({ runId: "count-to-5", input: enc({ count: 0, target: 5 }) });
console.log(`submitted ${runId}; status: ${JSON.stringify(await runtime.status(runId))}`);
const end = await runtime.wait(runId);
const result = dec<Counter>(end.outcome?.result);
console.log(`run ${runId} ${end.termination.status} after ${end.termination.finalStep + 1} steps with count ${result.count}`);

await worker.shutdown();
await queue.close();
