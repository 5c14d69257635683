/**
 * Tenant fair queue: per-tenant concurrency limits on the step queue.
 *
 * Shows: `queueConfigs: { "workflow-steps": { concurrency: { limit: 2,
 * key: "{tenant_id}" } } }` on `Queue.open`: at most two steps of one
 * tenant run at once, whatever the worker's own concurrency. A tenant that
 * floods the queue (acme, 12 runs) waits on its own limit while the others
 * (globex and initech, 3 runs each, submitted after acme's backlog) go
 * past it, instead of queueing behind it; a finished step frees its slot
 * and wakes the worker at once. Priorities still order jobs within what
 * the limits admit.
 *
 * Run: npx tsx examples/tenant-fair-queue.ts
 */
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

const store = new MemoryStore();
const queue = await Queue.open(store, "fair", {
  queueConfigs: { "workflow-steps": { concurrency: { limit: 2, key: "{tenant_id}" } } },
});

const running = new Map<string, number>();
const peak = new Map<string, number>();
const finished: string[] = [];

/** A step of about 20 ms that records how many steps of its tenant run at once. */
const runner: StepRunner = {
  async runStep(step) {
    const tenant = step.headers["tenant_id"]!;
    running.set(tenant, (running.get(tenant) ?? 0) + 1);
    peak.set(tenant, Math.max(peak.get(tenant) ?? 0, running.get(tenant)!));
    await new Promise((r) => setTimeout(r, 20));
    running.set(tenant, running.get(tenant)! - 1);
    finished.push(tenant);
    return StepOutcome.succeed(step.payload);
  },
};

// Six steps at once in this process: without the limit acme alone would take all six.
const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).maxConcurrentSteps(6).build();
const input = new TextEncoder().encode("report");
const ids: string[] = [];
for (let i = 0; i < 12; i++) ids.push((await runtime.submit({ input, options: { headers: { tenant_id: "acme" } } })).runId);
for (const tenant of ["globex", "initech"]) {
  for (let i = 0; i < 3; i++) ids.push((await runtime.submit({ input, options: { headers: { tenant_id: tenant } } })).runId);
}

const worker = runtime.spawn();
for (const id of ids) await runtime.wait(id);
await worker.shutdown();
await runtime.close();

for (const tenant of ["acme", "globex", "initech"]) {
  console.log(`${tenant}: ${finished.filter((t) => t === tenant).length} runs, at most ${peak.get(tenant)} at once`);
}
const lastSmall = Math.max(finished.lastIndexOf("globex"), finished.lastIndexOf("initech"));
const acmeAfter = finished.slice(lastSmall + 1).filter((t) => t === "acme").length;
console.log(`globex and initech were done while acme still had ${acmeAfter > 0 ? "runs" : "no runs"} to go`);
console.log("tenant-fair-queue done");
