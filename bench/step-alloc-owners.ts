/**
 * @module What one workflow step allocates, by the module (or function) of
 * this project that asked for it, in a compiled checkout.
 *
 * `step-alloc-sites.ts` sums the sampled bytes by the frame that allocated
 * them, so a string joined, an array sliced or a map grown shows as a
 * native frame (`join`, `slice`, `set`) shared by every caller. Here each
 * sample goes to the nearest frame above it that is JavaScript of a module
 * (natives, `Buffer`, the encoders and msgpackr's internals skipped), so a
 * module's figure is what its own code makes, whoever implements it.
 *
 * Same workload and sampling as `step-alloc-sites.ts` (the side-by-side
 * workload on a MemoryStore, submit, wait and outcome included; the
 * inspector's sampling heap profiler, collected objects kept). Counts, not
 * times; with many in flight they move with timing (the wait's rounds), so
 * compare checkouts alternating, at one load.
 *
 * `BY=module` (default) sums by module, `BY=function` by function and the
 * line it starts at, `BY=stack` by the last four frames; `FILTER=<text>`
 * keeps the rows whose name holds it.
 *
 * Run: `npm run build` in the checkout, then
 * `N=600 CONC=50 npx tsx bench/step-alloc-owners.ts <checkout>`.
 */
import { Session } from "node:inspector/promises";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 600);
const CONC = env("CONC", 50);
const INTERVAL = env("INTERVAL", 128);
const TOP = env("TOP", 40);
const BY = process.env.BY ?? "module";
const FILTER = process.env.FILTER ?? "";
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Frames that allocate for their caller: natives, node's own modules, the encoders and msgpackr's internals. */
const HELPER = /^\S+ (\(native\)|node:|encoding$|buffer$|unpack\.js$|pack\.js$)/;

const store = new T.MemoryStore();
const w = await openStepWorkload(T, store);
try {
  await w.drive(100, CONC);
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
  const rows = new Map<string, number>();
  let total = 0;
  const walk = (n: ProfileNode, stack: string[]) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const at = url.lastIndexOf("/dist/");
    const where = at >= 0 ? `${url.slice(at + 6)}:${lineNumber + 1}` : url === "" ? "(native)" : url.replace(/^.*\//, "");
    stack.push(`${functionName || "(anonymous)"} ${where}`);
    if (n.selfSize > 0) {
      let owner = stack.length - 1;
      while (owner > 0 && HELPER.test(stack[owner]!)) owner--;
      const frame = stack[owner]!;
      const key = BY === "stack" ? stack.slice(-4).reverse().join(" <- ") : BY === "function" ? frame : frame.replace(/^\S+ /, "").replace(/:\d+$/, "");
      if (FILTER === "" || key.includes(FILTER)) rows.set(key, (rows.get(key) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c, stack);
    stack.pop();
  };
  walk(profile.head, []);

  console.log(`${dir}: N=${N} CONC=${CONC} INTERVAL=${INTERVAL} BY=${BY} load ${loadAverageText()}`);
  console.log(`bytes allocated per step ${(total / steps).toFixed(0)}`);
  for (const [k, b] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(b / steps).toFixed(0).padStart(7)} B  ${k}`);
} finally {
  await w.close();
}
