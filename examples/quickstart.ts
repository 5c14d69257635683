/**
 * Quick start: the smallest complete workflow.
 *
 * Shows: opening a queue over an in-memory store, building a
 * `WorkflowRuntime` with a one-step runner that echoes its input, spawning
 * the worker, submitting a run, waiting for its end and shutting down.
 * Swap `MemoryStore` for `LocalStore` (a directory) or `S3Store` (a bucket)
 * to make runs survive a restart; nothing else changes.
 *
 * Run: npx tsx examples/quickstart.ts
 */
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

/** Bytes in, bytes out: every run succeeds at its first step with its input. */
const echo: StepRunner = {
  async runStep(step) {
    return StepOutcome.succeed(step.payload);
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "demo");
const runtime = WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook).build();
const worker = runtime.spawn();

const submitted = await runtime.submit({ input: enc("hello") });
console.log(`submitted run ${submitted.runId}`);

const end = await runtime.wait(submitted.runId);
console.log(`run ${end.termination.runId} ${end.termination.status} at step ${end.termination.finalStep} with result "${dec(end.outcome?.result)}"`);

await worker.shutdown();
await queue.close();
