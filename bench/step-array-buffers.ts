/**
 * @module The array buffers one workflow step allocates outside the heap,
 * by site, in a compiled checkout, over the side-by-side workload
 * (bench/support/step-workload.ts, 10-step runs on a MemoryStore; submit,
 * wait and outcome included) with CONC in flight.
 *
 * V8 keeps a typed array of up to 64 bytes on the heap; a larger one gets a
 * backing store outside it, which costs about 30 times as much to allocate
 * and free. Counted with the inspector's sampling heap profiler at a
 * sampling interval of one byte, so every allocation is a sample of its own
 * size: the `ArrayBuffer` object of a backing store outside the heap has a
 * size of its own (measured at start from `new Uint8Array(65)` against
 * `new Uint8Array(64)`), and is counted where a typed-array builtin
 * allocated it, by the builtin's caller.
 *
 * A count, not a time: one at a time (`CONC=1`) it repeats exactly; with
 * many in flight it moves a little with timing (WAL groups per step).
 *
 * Run: `npm run build` in the checkout, then
 * `N=60 CONC=1 npx tsx bench/step-array-buffers.ts <checkout>` (`TOP=12`
 * sites are printed).
 */
import { Session } from "node:inspector/promises";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN as M, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 60);
const CONC = env("CONC", 1);
const TOP = env("TOP", 12);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: ProfileNode[];
}
interface Profile {
  head: ProfileNode;
  samples: { size: number; nodeId: number }[];
}

/** The builtins that allocate a typed array's buffer, as the profiler names their frames. */
const ALLOCATORS = new Set(["Uint8Array", "ArrayBuffer", "slice", "FastBuffer", "DataView"]);

const session = new Session();
session.connect();

async function sampled(run: () => Promise<unknown> | unknown): Promise<Profile> {
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 1,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await run();
  return ((await session.post("HeapProfiler.stopSampling")) as unknown as { profile: Profile }).profile;
}

function sizes(p: Profile): Map<number, number> {
  const m = new Map<number, number>();
  for (const s of p.samples) m.set(s.size, (m.get(s.size) ?? 0) + 1);
  return m;
}

/** The size of the object a backing store outside the heap adds: seen 1,000 times allocating 65-byte arrays and not allocating 64-byte ones. */
async function outsideBufferSize(): Promise<number> {
  const keep: Uint8Array[] = [];
  const large = sizes(
    await sampled(() => {
      for (let i = 0; i < 1000; i++) keep.push(new Uint8Array(65));
    }),
  );
  const small = sizes(
    await sampled(() => {
      for (let i = 0; i < 1000; i++) keep.push(new Uint8Array(64));
    }),
  );
  const found = [...large].filter(([size, n]) => n >= 1000 && (small.get(size) ?? 0) < 100).map(([size]) => size);
  if (found.length !== 1) throw new Error(`cannot tell the size of an array buffer outside the heap: candidates ${found.join(", ") || "none"}`);
  return found[0]!;
}

function where(f: ProfileNode["callFrame"]): string {
  const at = f.url.lastIndexOf("/dist/");
  const place = at >= 0 ? `${f.url.slice(at + 6)}:${f.lineNumber + 1}` : f.url === "" ? "(native)" : f.url.replace(/^.*\//, "");
  return `${f.functionName || "(anonymous)"} ${place}`;
}

const bufferSize = await outsideBufferSize();
const store = new T.MemoryStore();
const w = await openStepWorkload(T, store);
try {
  await w.drive(100, CONC);
  const profile = await sampled(() => w.drive(N, CONC));
  session.disconnect();

  // Each node's allocating builtin's caller.
  const site = new Map<number, string>();
  const walk = (n: ProfileNode, parent: ProfileNode | undefined) => {
    if (ALLOCATORS.has(n.callFrame.functionName) && n.callFrame.url === "") site.set(n.id, parent === undefined ? "(root)" : where(parent.callFrame));
    for (const c of n.children) walk(c, n);
  };
  walk(profile.head, undefined);

  const steps = N * M;
  const sites = new Map<string, number>();
  let total = 0;
  for (const s of profile.samples) {
    const at = site.get(s.nodeId);
    if (s.size !== bufferSize || at === undefined) continue;
    sites.set(at, (sites.get(at) ?? 0) + 1);
    total++;
  }
  console.log(`${dir}: N=${N} CONC=${CONC} (${steps} steps) load ${loadAverageText()}`);
  console.log(`array buffers outside the heap per step ${(total / steps).toFixed(3)} (buffer object ${bufferSize} B)`);
  for (const [k, n] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(n / steps).toFixed(3).padStart(7)}  ${k}`);
} finally {
  await w.close();
}
