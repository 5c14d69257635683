/**
 * @module Where a workflow step's promises are made, in a compiled checkout:
 * every promise created over the side-by-side workload
 * (bench/support/step-workload.ts, 10-step runs on a MemoryStore; submit,
 * wait and outcome included) with CONC in flight, counted by the nearest
 * frame in the checkout's `dist/` (or the workload) that made it, and by
 * kind: `await` (the throwaway promise an enabled hook gives every await,
 * which does not exist without the hook), `async` (an async function's own
 * promise) or `other` (`new Promise`, `then`, `Promise.all`, ...). The
 * kind is told from the stack: an async function's own promise is made
 * before its first line runs, so its nearest frame is its caller's call
 * line, and a throwaway await promise comes with the awaiting frame on top.
 *
 * Counts repeat to within a few hundredths per step at one concurrency;
 * compare checkouts alternating. Slow (a stack per promise): use N of 100
 * or so.
 *
 * Run: `npm run build` in the checkout, then
 * `N=100 CONC=50 npx tsx bench/step-promise-sites.ts <checkout>` (`TOP=40` sites; `DEPTH=2`
 * names each site with its callers in the checkout, up to DEPTH frames).
 */
import { createHook, executionAsyncResource } from "node:async_hooks";
import { resolve } from "node:path";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 100);
const CONC = env("CONC", 50);
const TOP = env("TOP", 40);
const DEPTH = env("DEPTH", 1);
// Steps per run: 10 as in the side-by-side workload; `STEPS=1` for one-step runs, whose cost is mostly a run's edges.
const M = env("STEPS", STEPS_PER_RUN);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);
// Frames name the checkout's sources when source maps apply (tsx), its dist/ otherwise.
const root = `${resolve(dir)}/`;

const store = new T.MemoryStore();
const w = await openStepWorkload(T, store, M);
const sites = new Map<string, number>();
let promises = 0;
try {
  await w.drive(100, CONC);
  let counting = false;
  const holder: { stack?: string } = {};
  Error.stackTraceLimit = 16;
  const hook = createHook({
    init(_id, type) {
      if (!counting || type !== "PROMISE") return;
      promises++;
      Error.captureStackTrace(holder);
      const all = (holder.stack ?? "").split("\n");
      // The hook's own frames, down to the engine's promise hook, name no site.
      const frames = all.slice(all.findIndex((f) => f.includes("promiseInitHook")) + 1);
      if (process.env.SHOW && promises < 5) console.log(holder.stack);
      const mine = frames.filter((f) => f.includes(root) || f.includes("step-workload")).slice(0, DEPTH);
      const site =
        mine.length === 0
          ? `(outside) ${frames.slice(0, 2).join(" ")}`
          : mine
              .map((f) =>
                f
                  .trim()
                  .replace(/^at /, "")
                  .replace(root, "")
                  .replace(/\(.*\/bench\//, "(bench/"),
              )
              .join(" < ");
      sites.set(site, (sites.get(site) ?? 0) + 1);
    },
  }).enable();
  void executionAsyncResource;
  counting = true;
  await w.drive(N, CONC);
  counting = false;
  hook.disable();
} finally {
  await w.close();
}
const steps = N * M;
console.log(`${dir}: N=${N} CONC=${CONC} load ${loadAverageText()}`);
console.log(`promises per step ${(promises / steps).toFixed(2)}`);
for (const [k, n] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(n / steps).toFixed(3).padStart(7)}  ${k}`);
