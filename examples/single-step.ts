/**
 * Single step: a runner that finishes every run at its first step, and a
 * terminal hook that reports each termination.
 *
 * Shows: `StepOutcome.succeed` and `StepOutcome.fail` as runner verdicts
 * (a failure is an answer, not an infrastructure error: nothing is
 * retried or dead-lettered), submitter headers reaching the hook on
 * `RunOutcome.headers`, and the hook running as a queue job after the
 * terminating settlement committed (so it sees only committed outcomes).
 *
 * Run: npx tsx examples/single-step.ts
 */
import { MemoryStore, Queue, StepOutcome, WorkflowRuntime, type StepRunner, type TerminalHook } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

/** Echoes its input in upper case; refuses an empty input. */
const shout: StepRunner = {
  async runStep(step) {
    const text = dec(step.payload);
    if (text.length === 0) return StepOutcome.fail("nothing to shout");
    return StepOutcome.succeed(enc(text.toUpperCase()));
  },
};

const runs = 3;
let notified = 0;
let allNotified: () => void = () => undefined;
const done = new Promise<void>((resolve) => (allNotified = resolve));

/** Prints each termination. Delivery is at least once, so a real hook is idempotent. */
const printer: TerminalHook = {
  async onTermination(outcome) {
    const detail = outcome.status === "succeeded" ? `result "${dec(outcome.result)}"` : `error "${outcome.error}"`;
    console.log(`hook: run ${outcome.runId} (${outcome.headers["requested_by"]}) ${outcome.status} at step ${outcome.finalStep}, ${detail}`);
    if (++notified === runs) allNotified();
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "single-step");
const runtime = WorkflowRuntime.builder(queue, store, shout, printer).build();
const worker = runtime.spawn();

for (const [who, text] of [
  ["alice", "hello"],
  ["bob", "taquba"],
  ["carol", ""],
] as const) {
  const { runId } = await runtime.submit({ runId: `shout-${who}`, input: enc(text), options: { headers: { requested_by: who } } });
  console.log(`submitted ${runId} with input "${text}"`);
}

await done;
await worker.shutdown();
await queue.close();
console.log(`single-step done: ${notified} terminations observed by the hook`);
