/**
 * Whether array buffers that die old bring V8's next mark-compact forward
 * (and so lower the old generation's peak) or only pile up beside it.
 *
 * Objects of about 150 B are kept in a ring of 200,000 (they die old);
 * with `BUFFERS=1` a 16 KiB `Uint8Array` is also made every 40 objects and
 * kept in a ring of 1,000 (they die old too). Prints the mark-compacts, the
 * old space's largest size used (sampled every 5,000 objects) and RSS.
 *
 *   npx tsx bench/external-gc-budget.ts            # no buffers
 *   BUFFERS=1 npx tsx bench/external-gc-budget.ts  # with buffers
 *
 * Add `--trace-gc` (node --import tsx --trace-gc ...) to see the heap size
 * each mark-compact started at.
 */
import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";

const withBuffers = process.env.BUFFERS === "1";
const STEPS = 3_000_000;
let majors = 0;
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
});
observer.observe({ entryTypes: ["gc"] });

const objects: unknown[] = new Array(200_000).fill(null);
const buffers: (Uint8Array | null)[] = new Array(1_000).fill(null);
let maxOld = 0;
for (let i = 0; i < STEPS; i++) {
  objects[i % objects.length] = { a: i, b: [i, i + 1, i + 2], c: `x${i}` };
  if (withBuffers && i % 40 === 0) buffers[(i / 40) % buffers.length] = new Uint8Array(16 * 1024);
  if (i % 5_000 === 0) {
    const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space");
    maxOld = Math.max(maxOld, old?.space_used_size ?? 0);
    // A macrotask now and then, so the collector's tasks (incremental marking) run as they do in a server.
    await new Promise<void>((r) => setImmediate(r));
  }
}
observer.disconnect();
const mb = (n: number) => (n / 2 ** 20).toFixed(1);
console.log(`buffers ${withBuffers ? "yes" : "no"}: mark-compacts ${majors}, old space used at most ${mb(maxOld)} MB, RSS ${mb(process.memoryUsage().rss)} MB`);
