/**
 * @module Child workflows: what a child run costs its parent beyond the
 * child's own steps.
 *
 * A parent starts N one-step children in its first step and joins their
 * ends one after another (N join steps), against a baseline of the same N
 * one-step runs submitted from outside and waited for. Reports queue jobs
 * settled (step jobs plus the runtime's own: each child's end wakes its
 * parent through one small job), object-store puts and bytes put, and the
 * wall time, over a MemoryStore. Counts, not times, are the figures to
 * compare on a loaded machine.
 *
 * Env: N_CHILDREN (50), FLUSH_MS (engine flush window, 2).
 */
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, withCounting, type StepRunner } from "../runtime/index.js";

const N = Number(process.env.N_CHILDREN ?? 50);
const FLUSH_MS = Number(process.env.FLUSH_MS ?? 2);
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** Payloads: "child", "parent", or "join:<next index>". */
const runner: StepRunner = {
  async runStep(s) {
    const p = dec(s.payload);
    if (p === "child") return StepOutcome.succeed(enc("ok"));
    if (p === "parent") {
      for (let i = 0; i < N; i++) await s.children.start({ input: enc("child") });
      return StepOutcome.continueOnChild(enc("join:1"), s.children.completionKey(`${s.runId}-s0-0`));
    }
    const next = Number(p.slice("join:".length));
    if (next >= N) return StepOutcome.succeed(enc(`${N}`));
    return StepOutcome.continueOnChild(enc(`join:${next + 1}`), s.children.completionKey(`${s.runId}-s0-${next}`));
  },
};

async function measure(name: string, body: (runtime: WorkflowRuntime) => Promise<void>): Promise<void> {
  const store = withCounting(new MemoryStore());
  const queue = await Queue.open(store, "bench", { flushIntervalMs: FLUSH_MS });
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build();
  const worker = runtime.spawn();
  const before = { ...store.counts };
  const started = performance.now();
  await body(runtime);
  const ms = performance.now() - started;
  // Let the runtime's own jobs (wake-ups) settle before counting.
  for (let i = 0; i < 200; i++) {
    const st = await queue.view().stats("workflow-steps");
    if (st.pending === 0 && st.scheduled === 0 && st.claimed === 0) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const st = await queue.view().stats("workflow-steps");
  await worker.shutdown();
  await queue.close();
  const puts = store.counts.puts - before.puts;
  const bytes = store.counts.bytesIn - before.bytesIn;
  console.log(
    `${name.padEnd(34)} jobs settled ${String(st.done).padStart(5)}   store puts ${String(puts).padStart(5)}   bytes put ${String(bytes).padStart(9)}   ${ms.toFixed(0)} ms`,
  );
}

console.log(`child-workflows: N_CHILDREN=${N} FLUSH_MS=${FLUSH_MS}, MemoryStore`);
await measure(`${N} runs submitted and waited for`, async (runtime) => {
  const ids = [];
  for (let i = 0; i < N; i++) ids.push((await runtime.submit({ input: enc("child"), runId: `plain-${i}` })).runId);
  for (const id of ids) await runtime.wait(id);
});
await measure(`1 parent joining ${N} children`, async (runtime) => {
  await runtime.submit({ input: enc("parent"), runId: "parent" });
  const end = await runtime.wait("parent");
  if (end.termination.status !== "succeeded") throw new Error(`the parent ended ${end.termination.status}: ${end.termination.error}`);
});
