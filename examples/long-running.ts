/**
 * Long-running steps: extending the lease and cooperative cancellation.
 *
 * Shows: a step that runs longer than its queue's lease would be delivered
 * again by the reaper, so a long step extends its lease through
 * `step.lease.ensureAtLeast` before a slow call (here with the call's own
 * timeout) and at progress points. The same step watches
 * `step.cancelSignal`: `runtime.cancel` on a running step records the
 * request durably (`status` reports `cancelling`) and aborts the signal, and
 * the runner returns at once instead of finishing its remaining chunks.
 * Whatever the runner returns then, the run ends cancelled.
 *
 * Run: npx tsx examples/long-running.ts
 */
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

const CHUNKS = 20;
const CHUNK_TIMEOUT_MS = 60_000;

let chunksDone = 0;
let startedThird: () => void = () => undefined;
const thirdChunk = new Promise<void>((r) => (startedThird = r));

/** A slow call that honours an abort signal, as a well-behaved HTTP client would. */
function slowCall(signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, 100);
    signal.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });
}

const reindex: StepRunner = {
  async runStep(step) {
    const leaseLeft = () => `${Math.round((step.lease.expiresAt - Date.now()) / 1000)} s`;
    console.log(`step ${step.stepNumber}: started; lease expires in ${leaseLeft()}`);
    for (let chunk = 1; chunk <= CHUNKS; chunk++) {
      // Before each slow call: the lease must outlast the call's timeout.
      await step.lease.ensureAtLeast(CHUNK_TIMEOUT_MS);
      if (chunk === 1) console.log(`step ${step.stepNumber}: lease extended; expires in ${leaseLeft()}`);
      if (chunk === 3) startedThird();
      try {
        await slowCall(step.cancelSignal);
      } catch {
        console.log(`step ${step.stepNumber}: cancellation requested during chunk ${chunk}; stopping after ${chunksDone} of ${CHUNKS} chunks`);
        return StepOutcome.cancel("stopped on request");
      }
      chunksDone++;
    }
    return StepOutcome.succeed(new TextEncoder().encode(`${chunksDone} chunks`));
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "long-running");
const runtime = WorkflowRuntime.builder(queue, store, reindex, NoopTerminalHook).build();
const worker = runtime.spawn();

const { runId } = await runtime.submit({ runId: "reindex-catalog", input: new Uint8Array() });
await thirdChunk;
console.log(`cancel ${runId}: ${await runtime.cancel(runId)}; status now ${(await runtime.status(runId))?.state}`);
const end = await runtime.wait(runId);
console.log(`run ${runId} ${end.termination.status} ("${end.termination.error}") after ${chunksDone} of ${CHUNKS} chunks`);

await worker.shutdown();
await queue.close();
