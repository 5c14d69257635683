/**
 * @module Benchmark: the segment part of a writer's open alone, read-only,
 * over a queue's store on disk (what `loadSegments` costs: store reads,
 * checksums, building the key runs), with the queue's paging policy.
 *
 * Run: STORE_DIR=<a store bench/engine-memory.ts filled> npx tsx --expose-gc bench/engine-open-segments.ts
 * Env: STORE_DIR (required), QUEUE (mem), REPS (3).
 */
import { loadavg } from "node:os";
import { LocalStore, withCounting } from "../runtime/index.js";
import { loadSegments, readNewestManifest, type StoreContext } from "../runtime/engine/recovery.js";

const dir = process.env.STORE_DIR;
if (dir === undefined) throw new Error("STORE_DIR is required");
const REPS = Number(process.env.REPS ?? 3);
const store = withCounting(new LocalStore(dir));
const ctx: StoreContext = { store, prefix: `${process.env.QUEUE ?? "mem"}/db/`, retry: {} };
const manifest = (await readNewestManifest(ctx))!;
const stored = manifest.segments.reduce((n, s) => n + s.bytes, 0);
console.log(
  `engine-open-segments: ${manifest.segments.length} segments (${(stored / 2 ** 20).toFixed(1)} MiB), ${manifest.segments.reduce((n, s) => n + s.entries, 0).toLocaleString("en-US")} entries, load ${loadavg()[0]!.toFixed(1)}`,
);
for (let rep = 0; rep < REPS; rep++) {
  (globalThis as { gc?: () => void }).gc?.();
  store.reset();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const state = (await loadSegments(ctx, manifest, undefined, { keyPrefixes: ["j/"], minBytes: 64 }))!;
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - t0;
  state.stopIdleMerges();
  console.log(
    `  rep ${rep + 1}: ${ms.toFixed(0)} ms, CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms, ${store.counts.gets} reads, ${(store.counts.bytesOut / 2 ** 20).toFixed(1)} MiB read, ${state.size.toLocaleString("en-US")} keys, load ${loadavg()[0]!.toFixed(1)}`,
  );
}
