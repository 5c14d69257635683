/**
 * @module Time of a cancel of a job whose record is damaged, in a queue
 * store of JOBS pending jobs: a record whose fields still say where the
 * job is filed (an attempt count as text) is found with one lookup; one
 * whose fields cannot (cut to the map's head) by a scan of every index.
 * Both kinds, DAMAGED each, interleaved in one run; wall time per cancel
 * (median and p90), and CPU for all of each kind.
 *
 * Run: `JOBS=100000 DAMAGED=20 npx tsx bench/damaged-cancel.ts`.
 */
import { Packr } from "msgpackr";
import { MemoryStore, Queue, WriteBatch } from "../runtime/index.js";
import { ticketOf } from "../runtime/queue/claimed-job.js";
import { jobKey } from "../runtime/queue/keys.js";
import type { QueueCore } from "../runtime/queue/queue-core.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const JOBS = env("JOBS", 100_000);
const DAMAGED = env("DAMAGED", 20);
const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);

console.log(`JOBS=${JOBS} DAMAGED=${DAMAGED} load ${loadAverageText()}`);
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const queue = await Queue.open(new MemoryStore(), "bench", { flushIntervalMs: 0, logger: quiet });
try {
  const payload = new Uint8Array(64).fill(7);
  for (let n = 0; n < JOBS; n += 1000) {
    await queue.enqueueBatch(
      Array.from({ length: Math.min(1000, JOBS - n) }, (_, i) => ({ queueName: "jobs", payload, opts: { jobId: `j${n + i}`, headers: { tenant: "acme" } } })),
    );
  }
  await queue.enqueue("h", payload);
  const handle = (await queue.claim("h"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  const named: string[] = [];
  const unnamed: string[] = [];
  const batch = new WriteBatch();
  const picked = (i: number, k: number) => `j${Math.floor(((2 * i + k) * JOBS) / (2 * DAMAGED + 1))}`;
  // A checkpoint may have paged the records out: loaded before they are read.
  await core.engine.warm(Array.from({ length: DAMAGED }, (_, i) => [jobKey(picked(i, 1)), jobKey(picked(i, 2))]).flat());
  for (let i = 0; i < DAMAGED; i++) {
    const a = picked(i, 1);
    const b = picked(i, 2);
    const r = general.unpack(core.engine.get(jobKey(a))!) as Record<string, unknown>;
    r.attempts = "0";
    batch.put(jobKey(a), new Uint8Array(general.pack(r)));
    batch.put(jobKey(b), core.engine.get(jobKey(b))!.subarray(0, 2));
    named.push(a);
    unnamed.push(b);
  }
  await core.engine.commit(batch);
  const ms: Record<string, number[]> = { lookup: [], scan: [] };
  const cpu: Record<string, number> = { lookup: 0, scan: 0 };
  for (let i = 0; i < DAMAGED; i++) {
    for (const [kind, id] of [
      ["lookup", named[i]!],
      ["scan", unnamed[i]!],
    ] as const) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const outcome = await queue.cancelJob(id);
      ms[kind]!.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu[kind]! += c.user + c.system;
      if (outcome !== "removed") throw new Error(`cancel of ${id}: ${outcome}`);
    }
  }
  const stats = await queue.view().stats("jobs");
  if (stats.pending !== JOBS - 2 * DAMAGED) throw new Error(`pending ${stats.pending}, expected ${JOBS - 2 * DAMAGED}`);
  for (const kind of ["lookup", "scan"] as const) {
    const xs = ms[kind]!.sort((x, y) => x - y);
    console.log(
      `${kind}: median ${percentile(xs, 50).toFixed(3)} ms, p90 ${percentile(xs, 90).toFixed(3)} ms per cancel; CPU ${(cpu[kind]! / 1000 / DAMAGED).toFixed(3)} ms per cancel`,
    );
  }
  console.log(`load at end ${loadAverageText()}`);
} finally {
  await queue.close();
}
