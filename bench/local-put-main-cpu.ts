/**
 * @module What one create-if-absent put costs the main thread's CPU, one put
 * at a time: LocalStore through its put thread (`local`) and through the
 * thread pool (`pool`, `putThread: false`) beside MemoryStore, and a bare
 * timer sleep of about a put's wall time (what any wait for the put costs the
 * main thread to sleep and wake). An extra WAL put per cycle (a schedule
 * that overlaps puts with step work, bench/local-overlap-ab.ts) pays this
 * on the main thread.
 *
 * Each put (or sleep) follows a 1 ms timer, so the main thread has slept
 * before it as in the workload; its CPU is the thread's run time from Linux
 * schedstat around the awaited put alone, the read of schedstat included
 * (the bare sleep's figure holds the same read).
 *
 * Usage: `npx tsx bench/local-put-main-cpu.ts`. Env: N (300 puts per pass),
 * SIZES (15000,29000: a WAL object's bytes at two cohorts and at one),
 * SLEEP_MS (2), KINDS (local,pool,memory,sleep), ROUNDS (2). Passes alternate
 * the kinds per size, round by round.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as T from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";

const N = Number(process.env.N ?? 300);
const SIZES = (process.env.SIZES ?? "15000,29000").split(",").map(Number);
const SLEEP_MS = Number(process.env.SLEEP_MS ?? 2);
type Kind = "local" | "pool" | "memory" | "sleep";
const KINDS = (process.env.KINDS ?? "local,pool,memory,sleep").split(",") as Kind[];
const ROUNDS = Number(process.env.ROUNDS ?? 2);

function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function pass(kind: Kind, size: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "bench-put-main-cpu-"));
  const store = kind === "local" || kind === "pool" ? new T.LocalStore(dir, { putThread: kind === "local" }) : new T.MemoryStore();
  const body = new Uint8Array(size).fill(7);
  try {
    for (let i = 0; i < 20; i++) await store.put(`warm/${i}`, body, { ifNoneMatch: "*" });
    let cpuNs = 0;
    const walls: number[] = [];
    for (let i = 0; i < N; i++) {
      await pause(1);
      const c0 = mainThreadNs();
      const t0 = performance.now();
      if (kind === "sleep") await pause(SLEEP_MS);
      else await store.put(`wal/${String(i).padStart(8, "0")}`, body, { ifNoneMatch: "*" });
      walls.push(performance.now() - t0);
      cpuNs += mainThreadNs() - c0;
    }
    walls.sort((a, b) => a - b);
    const what = kind === "sleep" ? `sleep ${SLEEP_MS} ms` : `${kind} put ${size} B`;
    return `${what}: main-thread CPU ${(cpuNs / N / 1000).toFixed(1)} µs each, wall p50 ${percentile(walls, 50).toFixed(3)} ms`;
  } finally {
    await (store as { close?: () => Promise<void> }).close?.();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`local-put-main-cpu: N=${N} SIZES=${SIZES.join(",")} SLEEP_MS=${SLEEP_MS} KINDS=${KINDS.join(",")} ${loadAverageText()}`);
for (let round = 1; round <= ROUNDS; round++) {
  for (const size of SIZES) {
    for (const kind of KINDS) console.log(`round ${round} ${await pass(kind, size)}`);
  }
}
console.log(`load at end ${loadAverageText()}`);
