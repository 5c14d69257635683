/**
 * @module Job fan-out: a job group of N trivial jobs, cold and resubmitted.
 *
 * Phases, each timed from its first call to its last result:
 * - group cold: `JobGroup.submit` of N inputs (manifest write plus one
 *   submission commit per member), then `join` until every job ended;
 * - group resubmit: the same `submit` again; every member succeeded, so each
 *   is one member-record read and nothing is enqueued;
 * - keyed cold: N `JobRunner.submit` calls with idempotency keys, then every
 *   handle's `result()`;
 * - keyed resubmit: the same N submissions again, each answered by its dedup
 *   record.
 * Also object-store requests per job (gets + puts + deletes + lists) of the
 * cold group phase, and how many runs the handles' shared fallback poll
 * re-read (waits wake on termination announcements; the poll only covers a
 * termination no announcement reached). The handler adds two numbers, so figures are the
 * runtime's overhead.
 *
 * Env: N (1000), STORES (comma list of memory,local; default both),
 * CONCURRENCY (runner default 16), FLUSH_MS (engine flush window, 2).
 */
import { Ajv } from "ajv";
import { createValidator, defineHeaders, defineJob, JobRunner, LocalStore, MemoryStore, Queue, withCounting, type ObjectStore } from "../runtime/index.js";
import { withTempDir } from "./support/temp-dir.js";

const N = Number(process.env.N ?? 1000);
const STORES = (process.env.STORES ?? "memory,local").split(",");
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const FLUSH_MS = Number(process.env.FLUSH_MS ?? 2);

const ajv = new Ajv({ allErrors: true });
type AddInput = { a: number; b: number };
const headers = defineHeaders<Record<string, never>>({
  package: "bench",
  names: [],
  required: [],
  validator: createValidator("bench headers", ajv.compile({ type: "object", additionalProperties: false })),
});
const addJob = defineJob<"bench.add", AddInput, number, never, Record<string, never>>({
  name: "bench.add",
  package: "bench",
  input: createValidator<AddInput>(
    "bench.add input",
    ajv.compile({ type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] }),
  ),
  output: createValidator<number>("bench.add output", ajv.compile({ type: "number" })),
  headers,
  contractHash: "bench",
});

const fmt = (ms: number, count: number) => `${ms.toFixed(0).padStart(6)} ms  ${((count / ms) * 1000).toFixed(0).padStart(6)} jobs/s`;

/** CPU time (user + system) this process spent in the last `timed` call, in ms: less sensitive than wall time to other load on the machine. */
let lastCpuMs = 0;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await fn();
  const c = process.cpuUsage(c0);
  lastCpuMs = (c.user + c.system) / 1000;
  return [performance.now() - t0, r];
}

async function runOn(kind: string, base: ObjectStore): Promise<void> {
  const store = withCounting(base);
  const queue = await Queue.open(store, "bench", { flushIntervalMs: FLUSH_MS });
  const runner = JobRunner.builder(queue, store)
    .concurrency(CONCURRENCY)
    .register(addJob, { run: async (i) => i.a + i.b })
    .build();
  const worker = runner.spawn();
  const inputs = Array.from({ length: N }, (_, i) => ({ a: i, b: 1 }));
  try {
    const group = runner.group("fanout", addJob);
    const c0 = { ...store.counts };
    const [submitMs] = await timed(() => group.submit(inputs));
    const [joinMs, results] = await timed(() => group.join());
    const c1 = store.counts;
    const requests = c1.gets - c0.gets + (c1.puts - c0.puts) + (c1.deletes - c0.deletes) + (c1.lists - c0.lists);
    if (results.length !== N || results.some((r) => r.outcome.status !== "succeeded")) throw new Error("a job did not succeed");
    const [resubmitMs, again] = await timed(() => group.submit(inputs));
    if (again.submitted !== 0) throw new Error("the resubmission submitted jobs again");

    const [keyedMs] = await timed(async () => {
      const handles = await Promise.all(inputs.map((x, i) => runner.submit(addJob, x, { idempotencyKey: `k${i}` })));
      await Promise.all(handles.map((h) => h.result()));
    });
    const keyedCpuMs = lastCpuMs;
    const [keyedAgainMs, dups] = await timed(() => Promise.all(inputs.map((x, i) => runner.submit(addJob, x, { idempotencyKey: `k${i}` }))));
    if (dups.some((h) => h.newlySubmitted)) throw new Error("a keyed resubmission was new");

    console.log(`store=${kind}`);
    console.log(`  group cold      submit ${fmt(submitMs, N)}`);
    console.log(`                  join   ${fmt(joinMs, N)}`);
    console.log(`                  total  ${fmt(submitMs + joinMs, N)}   ${(requests / N).toFixed(1)} store requests/job`);
    console.log(`  group resubmit         ${fmt(resubmitMs, N)}`);
    console.log(
      `  keyed cold (submit+result) ${fmt(keyedMs, N)}   cpu ${keyedCpuMs.toFixed(0)} ms   ${runner.waits.fallbackReads} fallback-poll reads over all phases`,
    );
    console.log(`  keyed resubmit         ${fmt(keyedAgainMs, N)}`);
  } finally {
    await worker.shutdown();
    await queue.close();
  }
}

console.log(`jobs-fanout: N=${N} CONCURRENCY=${CONCURRENCY} FLUSH_MS=${FLUSH_MS} node ${process.version}`);
for (const kind of STORES) {
  if (kind === "local") await withTempDir("jobs-fanout-", (dir) => runOn(kind, new LocalStore(dir)));
  else await runOn(kind, new MemoryStore());
}
