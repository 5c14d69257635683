/**
 * @module Heap bytes allocated to build the step a runner is handed
 * (`makeStep`) and the claimed job a claim hands out (`makeClaimedJob`),
 * per object, in each compiled checkout named, alternating: the exact growth
 * of the heap over CALLS objects built and dropped, in a new space large
 * enough that no collection runs (a pass where one ran is not counted).
 * Counts, not times: they repeat exactly at any load.
 *
 * Run: `npm run build` in each checkout, then
 * `node --expose-gc --min-semi-space-size=256 --max-semi-space-size=256 --import tsx bench/step-object-bytes.ts <checkout> [<checkout>...]`.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { getHeapStatistics } from "node:v8";
import { loadAverageText } from "./support/load-average.js";

const CALLS = Number(process.env.CALLS ?? 100_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc and a large --min-semi-space-size (see the module note)");
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");

type Builder = (i: number) => object;
interface Checkout {
  dir: string;
  step: Builder;
  job: Builder;
}

async function load(dir: string): Promise<Checkout> {
  const at = (p: string) => pathToFileURL(resolve(dir, "dist/runtime", p)).href;
  const { makeStep } = (await import(at("workflow/steps/delivery.js"))) as { makeStep: (...a: unknown[]) => object };
  const { makeClaimedJob } = (await import(at("queue/claimed-job.js"))) as { makeClaimedJob: (...a: unknown[]) => object };
  const payload = new Uint8Array(16);
  const cancel = { cancelSignal: undefined };
  const lease = { expiresAt: 0, ensureAtLeast: async () => {} };
  const memo = {};
  const isLastAttempt = () => false;
  const clock = { now: () => 1 };
  const entry = { token: 1, expiresAt: 2 };
  return {
    dir,
    step: (i) =>
      makeStep(
        {
          runId: "r",
          headers: {},
          jobId: "j",
          attempt: 1,
          maxAttempts: 3,
          cancel,
          lease,
          memo,
          runMemo: memo,
          effects: memo,
          kv: memo,
          children: memo,
          isLastAttempt,
        },
        i,
        payload,
        undefined,
      ),
    job: (i) =>
      makeClaimedJob({}, {}, clock, { id: "j", queue: "q", payload, attempts: 1, maxAttempts: 3, priority: 0, enqueuedAt: i, claimedAt: i }, entry, payload),
  };
}

let collections = 0;
const observer = new PerformanceObserver((list) => {
  collections += list.getEntries().length;
});
observer.observe({ entryTypes: ["gc"] });

const ring: object[] = new Array(1024).fill(null);

async function bytesPer(build: Builder): Promise<string> {
  for (let i = 0; i < 10_000; i++) ring[i & 1023] = build(i);
  gc!();
  await new Promise((r) => setTimeout(r, 20));
  collections = 0;
  const before = getHeapStatistics().used_heap_size;
  // Each object stored (in a ring the size of the warm-up's last slice), so none is optimised away.
  for (let i = 0; i < CALLS; i++) ring[i & 1023] = build(i);
  const after = getHeapStatistics().used_heap_size;
  await new Promise((r) => setTimeout(r, 20));
  return collections === 0 ? ((after - before) / CALLS).toFixed(1) : `(${collections} collections)`;
}

const checkouts: Checkout[] = [];
for (const d of dirs) checkouts.push(await load(d));
console.log(`heap bytes per object built, CALLS=${CALLS}, load ${loadAverageText()}`);
for (let round = 0; round < 2; round++) {
  for (const c of round === 0 ? checkouts : [...checkouts].reverse()) {
    console.log(`${c.dir}: step ${await bytesPer(c.step)} B, claimed job ${await bytesPer(c.job)} B`);
  }
}
observer.disconnect();
