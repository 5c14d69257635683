/**
 * @module LocalStore create-if-absent puts of a WAL-sized body from several
 * checkouts in one process, alternating put by put (the order reversed every
 * other round), so the machine's drift and other processes' disk traffic hit
 * each alike: latency and the process's CPU (main thread and thread pool)
 * per put, and the main thread's own CPU and run-queue wait per put
 * (Linux schedstat; the put thread's and the pool's work is the rest).
 *
 * Usage: `npx tsx bench/local-put-ab.ts <checkout> [<checkout> ...]`, each a
 * directory whose `runtime/` is measured; `<checkout>:pool` measures it with
 * `{ putThread: false }` (every put on the thread pool). Env: N (300 puts
 * each), BYTES (750), GAP_US (0: the main thread computes this long after
 * each put, outside the figures, as a step's CPU between WAL puts would;
 * work a store does after answering then overlaps it rather than the other
 * checkout's put).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { LocalStore } from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";

const N = Number(process.env.N ?? 300);
const body = new Uint8Array(Number(process.env.BYTES ?? 750)).fill(7);
const GAP_US = Number(process.env.GAP_US ?? 0);

/** Keeps the main thread busy for `us` microseconds (no await: a step's CPU). */
function compute(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end) {
    // Busy on purpose.
  }
}
const args = process.argv.slice(2);
const checkouts = args.map((c) => resolve(c.replace(/:pool$/, "")));
const poolOnly = args.map((c) => c.endsWith(":pool"));
if (checkouts.length === 0) throw new Error("usage: npx tsx bench/local-put-ab.ts <checkout> [<checkout> ...]");

const stores: LocalStore[] = [];
for (const [k, c] of checkouts.entries()) {
  const mod = (await import(pathToFileURL(join(c, "runtime/index.ts")).href)) as typeof import("../runtime/index.js");
  stores.push(new mod.LocalStore(mkdtempSync(join(tmpdir(), "bench-put-ab-")), poolOnly[k] ? { putThread: false } : {}));
}
const ms: number[][] = checkouts.map(() => []);
const cpuUs = checkouts.map(() => 0);
const mainNs = checkouts.map(() => 0);
const waitNs = checkouts.map(() => 0);

/** The main thread's CPU time and run-queue wait so far, in ns (zeros where schedstat is missing). */
function mainThread(): { cpu: number; wait: number } {
  try {
    const [cpu, wait] = readFileSync("/proc/thread-self/schedstat", "latin1").split(" ");
    return { cpu: Number(cpu), wait: Number(wait) };
  } catch {
    return { cpu: 0, wait: 0 };
  }
}
try {
  for (const s of stores) await s.put("wal/warm", body);
  console.log(`local-put-ab: N=${N} BYTES=${body.length} GAP_US=${GAP_US} load ${loadAverageText()}`);
  for (let i = 0; i < N; i++) {
    const order = i % 2 === 0 ? [...stores.keys()] : [...stores.keys()].reverse();
    for (const k of order) {
      const main0 = mainThread();
      const cpu0 = process.cpuUsage();
      const t = performance.now();
      await stores[k]!.put(`wal/${String(i).padStart(20, "0")}`, body, { ifNoneMatch: "*" });
      ms[k]!.push(performance.now() - t);
      const cpu = process.cpuUsage(cpu0);
      const main1 = mainThread();
      cpuUs[k]! += cpu.user + cpu.system;
      mainNs[k]! += main1.cpu - main0.cpu;
      waitNs[k]! += main1.wait - main0.wait;
      compute(GAP_US);
      await new Promise((r) => setImmediate(r));
    }
  }
  args.forEach((c, k) => {
    const xs = ms[k]!.sort((a, b) => a - b);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(
      `${c}: p50 ${percentile(xs, 50).toFixed(3)} ms, p90 ${percentile(xs, 90).toFixed(3)} ms, mean ${mean.toFixed(3)} ms, CPU ${(cpuUs[k]! / N).toFixed(0)} µs per put, main thread ${(mainNs[k]! / 1000 / N).toFixed(0)} µs (run-queue wait ${(waitNs[k]! / 1000 / N).toFixed(0)} µs)`,
    );
  });
  console.log(`load at end ${loadAverageText()}`);
} finally {
  for (const s of stores) rmSync(s.root, { recursive: true, force: true });
}
