/**
 * @module What of a workflow step outlives a scavenge, by the function of
 * this project that allocated it, in a compiled checkout.
 *
 * Same workload as `step-alloc-owners.ts` (the side-by-side workload,
 * submit, wait and outcome included, CONC runs in flight) with the
 * inspector's sampling heap profiler, but MODE=survivors (default) drops
 * the samples of objects a scavenge collected and keeps those a full
 * collection did: what is left was copied at least once by a scavenge (or
 * promoted), which is a scavenge's whole cost. Before the profile is taken
 * the bench forces one scavenge, so objects of the last moments that would
 * have died young are not counted as survivors. MODE=all keeps every
 * sample (what each site allocates) for the ratio.
 *
 * Each sample goes to the nearest frame above it that is JavaScript of a
 * module (natives, node's modules, the encoders skipped), as in
 * step-alloc-owners. Rows: `BY=function` (default), `module` or `stack`
 * (last four frames). Also prints the engine's memtable size per step at
 * the end (what survives by design), from `queue.engineStats` when present.
 *
 * Counts, not times; at 50 in flight they move with the timing (waits,
 * batches), so compare checkouts alternating, at one load.
 *
 * Run: `npm run build` in the checkout, then
 * `N=600 CONC=50 STORE=memory npx tsx bench/step-survivor-sites.ts <checkout>`
 * (STORE=local for a LocalStore in a temporary directory).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type PerformanceEntry, PerformanceObserver, performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 200);
const SESSIONS = env("SESSIONS", 5);
const CONC = env("CONC", 50);
const INTERVAL = env("INTERVAL", 256);
const TOP = env("TOP", 40);
const BY = process.env.BY ?? "function";
const MODE = process.env.MODE ?? "survivors";
const STORE = process.env.STORE ?? "memory";
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

// A scavenge on demand, for the bench only (the library runs with Node's defaults).
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as (o?: { type: "minor" | "major" }) => void;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const HELPER = /^\S+ (\(native\)|node:|encoding$|buffer$|unpack\.js$|pack\.js$)/;

/** Mark-compacts (and their incremental steps) seen by the observer, with their start times. */
const majors: number[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0;
    if (kind !== 1) majors.push(e.startTime);
  }
}).observe({ entryTypes: ["gc"] });
const turn = () => new Promise((r) => setTimeout(r, 0));

const walk = (n: ProfileNode, stack: string[]) => {
  const { functionName, url, lineNumber } = n.callFrame;
  const at = url.lastIndexOf("/dist/");
  const where = at >= 0 ? `${url.slice(at + 6)}:${lineNumber + 1}` : url === "" ? "(native)" : url.replace(/^.*\//, "");
  stack.push(`${functionName || "(anonymous)"} ${where}`);
  if (n.selfSize > 0) {
    let owner = stack.length - 1;
    while (owner > 0 && HELPER.test(stack[owner]!)) owner--;
    const frame = stack[owner]!;
    const key = BY === "stack" ? stack.slice(-4).reverse().join(" <- ") : BY === "module" ? frame.replace(/^\S+ /, "").replace(/:\d+$/, "") : frame;
    rows.set(key, (rows.get(key) ?? 0) + n.selfSize);
    total += n.selfSize;
  }
  for (const c of n.children) walk(c, stack);
  stack.pop();
};

const tmp = mkdtempSync(join(tmpdir(), "taquba-survivors-"));
let sub = 0;
const open = () => openStepWorkload(T, STORE === "local" ? new T.LocalStore(join(tmp, String(sub++))) : new T.MemoryStore());
// Compiled code first, on a store of its own.
const warm = await open();
await warm.drive(200, CONC);
await warm.close();
const survivors = MODE === "survivors";
const rows = new Map<string, number>();
let total = 0;
let kept = 0;
let skipped = 0;
try {
  // Sessions of N runs, each on a fresh store as the side-by-side's windows are; one with a mark-compact inside
  // is dropped (a full collection takes the young generation's dead objects with it, and those samples would stay).
  for (let s = 0; s < SESSIONS; s++) {
    const w = await open();
    try {
      await w.drive(20, 10);
      gc({ type: "minor" });
      gc({ type: "minor" });
      await turn();
      const session = new Session();
      session.connect();
      await session.post("HeapProfiler.startSampling", {
        samplingInterval: INTERVAL,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: !survivors,
      });
      const t0 = performance.now();
      await w.drive(N, CONC);
      // Objects of the last moments that die young are not survivors: one scavenge lets them go.
      if (survivors) gc({ type: "minor" });
      const t1 = performance.now();
      const { profile } = (await session.post("HeapProfiler.stopSampling")) as unknown as { profile: { head: ProfileNode } };
      session.disconnect();
      await turn();
      if (survivors && majors.some((t) => t >= t0 && t <= t1)) {
        skipped++;
        continue;
      }
      kept++;
      walk(profile.head, []);
    } finally {
      await w.close();
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
const steps = N * M * kept;

console.log(
  `${dir}: MODE=${MODE} STORE=${STORE} N=${N} SESSIONS=${SESSIONS} (kept ${kept}, ${skipped} dropped for a mark-compact inside) CONC=${CONC} INTERVAL=${INTERVAL} BY=${BY} load ${loadAverageText()} node ${process.version}`,
);
console.log(`${survivors ? "bytes surviving a scavenge" : "bytes allocated"} per step ${(total / steps).toFixed(0)}`);
for (const [k, b] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(b / steps).toFixed(1).padStart(8)} B  ${k}`);
