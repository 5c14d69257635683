/**
 * @module CPU of a queue over LocalStore enqueueing N jobs (default 4000)
 * of 64 bytes fifty at a time, then claiming and acking them fifty at a
 * time, checkpointing every 200 WAL objects: every WAL object and segment
 * goes through the store's put (and its private copy of the body). Prints
 * the process CPU time of that work (user + system) as JSON.
 *
 * Run: `N=8000 npx tsx bench/local-enqueue-ack-cpu.ts`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalStore, Queue } from "../runtime/index.js";

const N = Number(process.env.N ?? 4000);
const dir = mkdtempSync(join(tmpdir(), "taquba-bench-"));
const queue = await Queue.open(new LocalStore(dir), "q", { engineOptions: { checkpointWalObjects: 200 } });
const payload = new Uint8Array(64).fill(1);
const start = process.cpuUsage();
for (let i = 0; i < N; i += 50) await Promise.all(Array.from({ length: 50 }, () => queue.enqueue("w", payload)));
for (let done = 0; done < N; ) {
  const jobs = await queue.claimBatch("w", 50);
  await Promise.all(jobs.map((j) => queue.ack(j)));
  done += jobs.length;
}
const cpu = process.cpuUsage(start);
await queue.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ N, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }));
