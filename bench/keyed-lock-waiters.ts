/**
 * @module Time per waiter of the runtime's per-key lock (`KeyedLock`) when
 * many callers wait on one key: each holder is a no-op, all callers arrive at
 * once. A hand-off that costs time in the queue's length shows as a time per
 * waiter growing with the waiters.
 *
 * `npx tsx bench/keyed-lock-waiters.ts [checkout]` (default: this one);
 * `WAITERS=10000,100000,400000`.
 */
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const checkout = resolve(process.argv[2] ?? ".");
const counts = (process.env.WAITERS ?? "10000,100000,400000").split(",").map(Number);
const { KeyedLock } = (await import(
  pathToFileURL(`${checkout}/runtime/workflow/runs/run-events.ts`).href
)) as typeof import("../runtime/workflow/runs/run-events.js");

console.log(`keyed-lock-waiters: checkout ${checkout}, waiters ${counts.join(", ")}, node ${process.version}, load ${loadavg()[0]!.toFixed(2)}`);
for (const n of counts) {
  const lock = new KeyedLock();
  const start = performance.now();
  const all: Promise<number>[] = [];
  for (let i = 0; i < n; i++) all.push(lock.run("key", async () => i));
  await Promise.all(all);
  const ms = performance.now() - start;
  console.log(`${n} waiters: ${ms.toFixed(0)} ms, ${((ms * 1e6) / n).toFixed(0)} ns per waiter`);
}
