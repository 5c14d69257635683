/**
 * @module What one workflow step allocates, in a compiled checkout: the
 * promises it creates and the bytes it allocates by site, over the
 * side-by-side workload (bench/support/step-workload.ts, 10-step runs on a
 * MemoryStore; submit, wait and outcome included) with CONC in flight.
 *
 * Two passes after a warm-up, each over N runs:
 * - promises: an `async_hooks` init hook counts PROMISE resources. The hook
 *   also gives every `await` a throwaway promise, so the count is above what
 *   runs without it; compare checkouts, not absolute numbers.
 * - bytes: the inspector's sampling heap profiler (every INTERVAL bytes,
 *   objects already collected by minor and major GC kept), summed per
 *   function and line of the checkout's `dist/` (other code by function).
 *
 * Counts, not times: one at a time (`CONC=1`) they repeat to within a
 * fraction of a per cent at any load; with many in flight they move with
 * timing (the wait loop's reads, WAL groups per step), so compare checkouts
 * alternating, at one load.
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/step-alloc-sites.ts <checkout>` (`CONC=1 N=60`
 * for one at a time; `TOP=30` sites are printed; `CALLER=1` names a native
 * site with its nearest caller in the checkout).
 */
import { createHook } from "node:async_hooks";
import { Session } from "node:inspector/promises";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const INTERVAL = env("INTERVAL", 1024);
const TOP = env("TOP", 30);
// Steps per run: 10 as in the side-by-side workload; `STEPS=1` for one-step runs, whose cost is mostly a run's edges.
const M = env("STEPS", STEPS_PER_RUN);
// `CALLER=1`: a site outside the checkout (a native such as `slice`, Node's own code) is named with its nearest caller in it.
const CALLER = env("CALLER", 0) === 1;
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const store = new T.MemoryStore();
const w = await openStepWorkload(T, store, M);
try {
  await w.drive(100, CONC);

  let promises = 0;
  let counting = false;
  const hook = createHook({
    init(_id, type) {
      if (counting && type === "PROMISE") promises++;
    },
  }).enable();
  counting = true;
  await w.drive(N, CONC);
  counting = false;
  hook.disable();

  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: INTERVAL,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await w.drive(N, CONC);
  const { profile } = (await session.post("HeapProfiler.stopSampling")) as unknown as { profile: { head: ProfileNode } };
  session.disconnect();

  const steps = N * M;
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (n: ProfileNode, caller: string) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const at = url.lastIndexOf("/dist/");
    const where = at >= 0 ? `${url.slice(at + 6)}:${lineNumber + 1}` : url === "" ? "(native)" : url.replace(/^.*\//, "");
    const name = `${functionName || "(anonymous)"} ${where}`;
    const outside = url === "" || url.startsWith("node:");
    if (n.selfSize > 0) {
      const key = CALLER && outside && caller !== "" ? `${name} < ${caller}` : name;
      sites.set(key, (sites.get(key) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c, outside ? caller : name);
  };
  walk(profile.head, "");

  console.log(`${dir}: N=${N} CONC=${CONC} INTERVAL=${INTERVAL} load ${loadAverageText()}`);
  console.log(`promises per step ${(promises / steps).toFixed(2)}`);
  console.log(`bytes allocated per step ${(total / steps).toFixed(0)}`);
  for (const [k, b] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    console.log(`${(b / steps).toFixed(0).padStart(7)} B  ${k}`);
  }
} finally {
  await w.close();
}
