/**
 * @module Engine heap profile: where the writer's heap goes per pending job.
 *
 * Fills N pending 64 B jobs (argv[2], default 100000) through the queue on a
 * LocalStore, optionally closes and reopens it (REOPEN=1), runs a full GC,
 * writes a V8 heap snapshot and prints the heap objects grouped by type and
 * name, in bytes per job (largest first): key strings, typed array views,
 * array buffers, B-tree node arrays. Counts are exact; the grouping is
 * V8's. Heap snapshots of large heaps take long and need memory: 200,000
 * jobs is plenty to tell per-job costs from fixed ones.
 *
 *   npx tsx --expose-gc bench/engine-heap-profile.ts 200000
 *   REOPEN=1 npx tsx --expose-gc bench/engine-heap-profile.ts 200000
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeHeapSnapshot } from "node:v8";
import { LocalStore, Queue } from "../runtime/index.js";
import { withTempDir } from "./support/temp-dir.js";

const N = Number(process.argv[2] ?? 100_000);
const REOPEN = process.env.REOPEN === "1";
const TOP = Number(process.env.TOP ?? 15);
const PAYLOAD = new Uint8Array(64).fill(7);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc");

interface HeapSnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Self sizes of the snapshot's nodes, summed by type and name. */
function byTypeAndName(file: string): Map<string, { count: number; bytes: number }> {
  const snap = JSON.parse(readFileSync(file, "utf8")) as HeapSnapshotFile;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f)) as [number, number, number];
  const out = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + typeAt]!]!;
    // Strings are named by their contents: group them by kind instead.
    const name = type.includes("string") ? "" : snap.strings[snap.nodes[i + nameAt]!]!.slice(0, 40);
    const key = `${type} ${name}`.trim();
    const slot = out.get(key) ?? { count: 0, bytes: 0 };
    slot.count++;
    slot.bytes += snap.nodes[i + sizeAt]!;
    out.set(key, slot);
  }
  return out;
}

await withTempDir("taquba-heap-profile-", async (dir) => {
  let queue = await Queue.open(new LocalStore(join(dir, "store")), "mem", {});
  for (let i = 0; i < N; i += 1000) {
    const n = Math.min(1000, N - i);
    await queue.enqueueBatch(Array.from({ length: n }, () => ({ queueName: "jobs", payload: PAYLOAD })));
  }
  if (REOPEN) {
    await queue.close();
    queue = await Queue.open(new LocalStore(join(dir, "store")), "mem", {});
  }
  gc();
  const m = process.memoryUsage();
  const stats = queue.engineStats;
  const groups = byTypeAndName(writeHeapSnapshot(join(dir, "heap.heapsnapshot")));
  await queue.close();
  const perJob = (b: number) => (b / N).toFixed(1);
  console.log(`engine-heap-profile: ${N.toLocaleString("en-US")} pending jobs of 64 B, LocalStore, ${REOPEN ? "after a reopen" : "after the fill"}`);
  console.log(
    `heap ${perJob(m.heapUsed)} B/job, array buffers ${perJob(m.arrayBuffers)} B/job; WAL objects since the last checkpoint ${stats.walObjectsSinceCheckpoint}, segment runs ${stats.segmentRuns}`,
  );
  console.log("| heap objects (V8 type and name) | count | bytes per job |");
  console.log("|---|---|---|");
  for (const [key, g] of [...groups].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, TOP)) {
    console.log(`| ${key} | ${g.count.toLocaleString("en-US")} | ${perJob(g.bytes)} |`);
  }
});
