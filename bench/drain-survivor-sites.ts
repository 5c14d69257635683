/**
 * @module Drain survivor sites: which allocation sites of a drain survive
 * scavenges, set against all that the drain allocates there.
 *
 * Opens a store an earlier `engine-memory` run filled (STORE_DIR, FILL_ONLY=1;
 * run on a copy: the drain takes jobs off it), drains WARM claims, then LIMIT
 * more with the inspector's sampling heap profiler on. MODE=all keeps every
 * sample (objects collected by minor and major GCs too): what each site
 * allocates. MODE=survivors drops the objects a scavenge collected: what each
 * site puts in the old generation (or keeps young). Run both on fresh copies,
 * alternating, and compare site by site; the ratio says how much of a site's
 * allocation outlives a scavenge.
 *
 * Bundled as `engine-memory` is (the sites are then named by the bundle's
 * lines, the same in both modes):
 *
 *   npx esbuild bench/drain-survivor-sites.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/sites.mjs
 *   MODE=all STORE_DIR=<copy> node bench/.out/sites.mjs
 *   MODE=survivors STORE_DIR=<another copy> node bench/.out/sites.mjs
 */
import { Session } from "node:inspector/promises";
import { loadavg } from "node:os";
import { LocalStore, Queue } from "../runtime/index.js";

const STORE_DIR = process.env.STORE_DIR;
if (STORE_DIR === undefined) throw new Error("STORE_DIR: a copy of a filled store");
const MODE = process.env.MODE ?? "survivors";
const WARM = Number(process.env.WARM ?? 10_000);
const LIMIT = Number(process.env.LIMIT ?? 30_000);
const DRAINERS = Number(process.env.DRAINERS ?? 128);
const TOP = Number(process.env.TOP ?? 40);
const INTERVAL = Number(process.env.INTERVAL ?? 512);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const queue = await Queue.open(new LocalStore(STORE_DIR), "mem", {});
let claims = 0;
async function drain(limit: number): Promise<void> {
  await Promise.all(
    Array.from({ length: DRAINERS }, async () => {
      while (claims < limit) {
        const job = await queue.claim("jobs");
        if (job === null) return;
        claims++;
        await queue.ack(job);
      }
    }),
  );
}
await drain(WARM);
const session = new Session();
session.connect();
await session.post("HeapProfiler.enable");
await session.post("HeapProfiler.startSampling", {
  samplingInterval: INTERVAL,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: MODE === "all",
});
const from = claims;
await drain(WARM + LIMIT);
const { profile } = (await session.post("HeapProfiler.stopSampling")) as { profile: { head: ProfileNode } };
const n = claims - from;
const sites = new Map<string, number>();
const walk = (node: ProfileNode): void => {
  const f = node.callFrame;
  const at = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}`;
  sites.set(at, (sites.get(at) ?? 0) + node.selfSize);
  for (const c of node.children) walk(c);
};
walk(profile.head);
let total = 0;
for (const b of sites.values()) total += b;
console.log(`MODE=${MODE}: ${n} claims, ${(total / n).toFixed(0)} B per claim sampled, load ${loadavg()[0]!.toFixed(1)}`);
for (const [at, b] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(b / n).toFixed(1).padStart(8)} B  ${at}`);
await queue.close();
