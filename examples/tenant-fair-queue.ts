/**
 * Tenant fair queue: per-tenant concurrency and rate limits declared in a spec.
 *
 * Shows: `concurrency: { limit: 2, key: "{tenant_id}" }` and
 * `rate_limit: { limit: 50, period_ms: 1000, key: "{tenant_id}" }` on the
 * `report.build` job of `tenant-fair-queue/tenants.taquba.yaml` (generated
 * into `tenant-fair-queue/generated`). The runtime the runner builds
 * enforces them on its step queue: at most two builds of one tenant run at
 * once, whatever the worker's own concurrency (six here). A tenant that
 * floods the queue (acme, 12 reports) waits on its own limit while the
 * others (globex and initech, 3 each, submitted after acme's backlog) go
 * past it instead of queueing behind it; a finished build frees its slot
 * and wakes the worker at once. While acme waits, the queue's view says
 * why (`waiting: { reason: "concurrency", key: "acme", ... }`).
 *
 * Run: npx tsx examples/tenant-fair-queue.ts
 */
import { JobRunner, MemoryStore, Queue } from "taquba";
import { tenants } from "./tenant-fair-queue/generated/index.js";

const running = new Map<string, number>();
const peak = new Map<string, number>();
const finished: string[] = [];

/** A build of about 20 ms that records how many builds of its tenant run at once. */
class ReportBuild implements tenants.ReportBuildHandler {
  async run(input: tenants.ReportBuildInput, ctx: tenants.ReportBuildContext): Promise<tenants.ReportBuildOutput> {
    const tenant = ctx.headers.tenant_id;
    running.set(tenant, (running.get(tenant) ?? 0) + 1);
    peak.set(tenant, Math.max(peak.get(tenant) ?? 0, running.get(tenant)!));
    await new Promise((r) => setTimeout(r, 20));
    running.set(tenant, running.get(tenant)! - 1);
    finished.push(tenant);
    return { pages: input.name.length };
  }
}

const store = new MemoryStore();
const queue = await Queue.open(store, "fair");
// Six builds at once in this process: without the spec's limit acme alone would take all six.
const runner = tenants.register(JobRunner.builder(queue, store).concurrency(6), { reportBuild: new ReportBuild() }).build();
const client = tenants.client(runner);

const handles = [];
for (let i = 0; i < 12; i++) handles.push(await client.reportBuild.submit({ name: `acme-${i}` }, { headers: { tenant_id: "acme" } }));
for (const tenant of ["globex", "initech"]) {
  for (let i = 0; i < 3; i++) handles.push(await client.reportBuild.submit({ name: `${tenant}-${i}` }, { headers: { tenant_id: tenant } }));
}

const worker = runner.spawn();
let shown = false;
for (const h of handles) {
  if (!shown && finished.length > 0) {
    // Some acme build still waits for one of its tenant's two slots; the view names the limit.
    const pending = await queue.view().listJobs(runner.runtime.queueName, "pending");
    const held = pending.items.find((j) => j.waiting?.reason === "concurrency");
    if (held?.waiting?.reason === "concurrency") {
      console.log(`a build of ${held.waiting.key} waits: ${held.waiting.held} of ${held.waiting.limit} slots of "${held.waiting.rule}" taken`);
      shown = true;
    }
  }
  await h.output();
}
await worker.shutdown();
await runner.close();

for (const tenant of ["acme", "globex", "initech"]) {
  console.log(`${tenant}: ${finished.filter((t) => t === tenant).length} runs, at most ${peak.get(tenant)} at once`);
}
const lastSmall = Math.max(finished.lastIndexOf("globex"), finished.lastIndexOf("initech"));
const acmeAfter = finished.slice(lastSmall + 1).filter((t) => t === "acme").length;
console.log(`globex and initech were done while acme still had ${acmeAfter > 0 ? "runs" : "no runs"} to go`);
console.log("tenant-fair-queue done");
