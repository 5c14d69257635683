/**
 * Quick start: the smallest complete workflow, runnable as pasted into a
 * new project (the README shows everything below this comment).
 *
 * Shows: opening a queue over an in-memory store, building a
 * `WorkflowRuntime` with a one-step runner that echoes its input, spawning
 * the worker, submitting a run, waiting for its end, and closing.
 *
 * Run: npx tsx examples/quickstart.ts
 */
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

// A step runner takes bytes and returns an outcome; this one ends every run at once with its input.
const echo: StepRunner = {
  async runStep(step) {
    return StepOutcome.succeed(step.payload);
  },
};

// In memory here; new LocalStore("./data") or openStore("s3://bucket/prefix") makes runs survive restarts.
const store = new MemoryStore();
const queue = await Queue.open(store, "demo");
const runtime = WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook).build();
runtime.spawn();

const submitted = await runtime.submit({ input: new TextEncoder().encode("hello") });
console.log(`submitted run ${submitted.runId}`);

const end = await runtime.wait(submitted.runId);
const result = new TextDecoder().decode(end.outcome?.result);
console.log(`run ${end.termination.runId} ${end.termination.status} at step ${end.termination.finalStep} with result "${result}"`);

// Drains the worker, then closes the queue; the process can exit.
await runtime.close();
