/**
 * @module A WAL-like stream of create-if-absent LocalStore puts into one
 * directory, each followed by GAP_MS of main-thread CPU (what a wave of
 * steps at 50 in flight, or one step one at a time, spends between a put's
 * answer and the next put), for several checkouts in one process: blocks
 * of BLOCK puts per checkout, alternating, the order reversed every other
 * round, so a disk shared with other work slows each alike. Prints each
 * checkout's put wall time (p50, p90), its put thread's CPU per put
 * (Linux schedstat; the tidy-up after each answer included), the share
 * of its puts whose temporary file the put thread fsynced ahead, and how
 * often the main thread blocked and was woken during a put (its voluntary
 * context switches from the call to the answer, as a histogram: 1 is the
 * answer's wake-up alone) and the process's CPU from the call to the
 * answer (every thread; the put thread's tidy-up after the answer mostly
 * not), and how often the main thread was preempted in the same span (its
 * involuntary context switches: the put thread woken by the request may
 * take the main thread's core, twice when it meets the lock V8 holds while
 * waking it). With DIR on a tmpfs (/dev/shm) and small BYTES, a put costs little
 * of the disk and these show the hand-off between the threads.
 *
 * Usage: `npx tsx bench/local-put-gap-ab.ts <checkout> [<checkout> ...]`.
 * Env: BYTES (40960, a WAL object at 50 in flight), GAP_MS (2), BLOCK (20),
 * ROUNDS (20), DIR (the temporary directory).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";
import type { Taquba } from "./support/step-workload.js";

const BYTES = Number(process.env.BYTES ?? 40960);
const GAP_MS = Number(process.env.GAP_MS ?? 2);
const BLOCK = Number(process.env.BLOCK ?? 20);
const ROUNDS = Number(process.env.ROUNDS ?? 20);

const args = process.argv.slice(2);
if (args.length === 0) throw new Error("usage: npx tsx bench/local-put-gap-ab.ts <checkout> [<checkout> ...]");

/** Nanoseconds on a CPU so far of each of this process's threads (Linux schedstat), by thread id. */
function threadCpuNs(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      out.set(tid, Number(readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ")[0]));
    } catch {
      // Ended between the listing and the read.
    }
  }
  return out;
}

/** The main thread's voluntary and involuntary context switches so far, and the process's CPU in µs (every thread). */
function mainThread(): { waits: number; preempted: number; us: number } {
  const status = readFileSync(`/proc/self/task/${process.pid}/status`, "utf8");
  const cpu = process.cpuUsage();
  return {
    waits: Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1]),
    preempted: Number(/^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1]),
    us: cpu.user + cpu.system,
  };
}

/** Keeps the main thread busy for `ms`, as a wave of steps would. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy on purpose
  }
}

interface Subject {
  name: string;
  putMs: number[];
  /** The main thread's wake-ups per put: how many puts had 0, 1, 2, 3 or more. */
  waits: number[];
  /** The main thread's involuntary context switches from the puts' calls to their answers. */
  preempted: number;
  cpuUs: number;
  /** The process's CPU over the blocks' puts and the tidy-up after the last, the gaps' own CPU taken out. */
  blockCpuUs: number;
  puts: number;
  synced: number;
  /** The checkout's put thread (found after its first block) and its CPU over the counted blocks. */
  tid: string | undefined;
  threadNs: number;
  block(): Promise<void>;
  close(): void;
}

const subjects: Subject[] = [];
for (const arg of args) {
  const checkout = resolve(arg);
  const T = (await import(pathToFileURL(join(checkout, "runtime/index.ts")).href)) as Taquba;
  const thread = (
    (await import(pathToFileURL(join(checkout, "runtime/store/local-put-thread.ts")).href)) as { sharedPutThread(): { syncedAhead?: number } }
  ).sharedPutThread();
  const dir = mkdtempSync(join(process.env.DIR ?? tmpdir(), "bench-put-gap-"));
  const store = new T.LocalStore(dir);
  const body = new Uint8Array(BYTES).fill(7);
  let seq = 0;
  const s: Subject = {
    name: arg,
    putMs: [],
    waits: [0, 0, 0, 0],
    preempted: 0,
    cpuUs: 0,
    blockCpuUs: 0,
    puts: 0,
    synced: 0,
    tid: undefined,
    threadNs: 0,
    async block() {
      const synced0 = thread.syncedAhead;
      const cpu0 = s.tid === undefined ? 0 : (threadCpuNs().get(s.tid) ?? 0);
      const block0 = process.cpuUsage();
      let spun = 0;
      for (let i = 0; i < BLOCK; i++) {
        const m = mainThread();
        const t = performance.now();
        await store.put(`wal/${String(++seq).padStart(12, "0")}`, body, { ifNoneMatch: "*" });
        s.putMs.push(performance.now() - t);
        const after = mainThread();
        s.waits[Math.min(3, after.waits - m.waits)]!++;
        s.preempted += after.preempted - m.preempted;
        s.cpuUs += after.us - m.us;
        const spin0 = process.cpuUsage();
        spin(GAP_MS);
        const spinCpu = process.cpuUsage(spin0);
        spun += spinCpu.user + spinCpu.system;
      }
      // The thread's tidy-up after the last answer (and its fsync ahead) belongs to this block.
      await (thread as { tidied?(): Promise<void> }).tidied?.();
      const blockCpu = process.cpuUsage(block0);
      s.blockCpuUs += blockCpu.user + blockCpu.system - spun;
      if (s.tid !== undefined) s.threadNs += (threadCpuNs().get(s.tid) ?? 0) - cpu0;
      s.puts += BLOCK;
      if (synced0 !== undefined) s.synced += thread.syncedAhead! - synced0;
      // The stream's objects deleted between blocks, as checkpoints do, so the directory stays small.
      for (let k = seq - BLOCK + 1; k <= seq - 2; k++) await store.delete(`wal/${String(k).padStart(12, "0")}`);
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
  subjects.push(s);
}

console.log(`local-put-gap-ab: BYTES=${BYTES} GAP_MS=${GAP_MS} BLOCK=${BLOCK} ROUNDS=${ROUNDS}, load at start ${loadAverageText()}`);
// A first block each, not counted: the thread starts (the thread that appears is the checkout's) and the directory is made.
for (const s of subjects) {
  const before = new Set(threadCpuNs().keys());
  await s.block();
  s.tid = [...threadCpuNs().keys()].find((t) => !before.has(t));
}
for (const s of subjects) {
  s.putMs.length = 0;
  s.waits = [0, 0, 0, 0];
  s.preempted = 0;
  s.cpuUs = 0;
  s.blockCpuUs = 0;
  s.puts = 0;
  s.synced = 0;
  s.threadNs = 0;
}
for (let r = 0; r < ROUNDS; r++) {
  for (const s of r % 2 === 0 ? subjects : [...subjects].reverse()) await s.block();
}
for (const s of subjects) {
  const sorted = [...s.putMs].sort((a, b) => a - b);
  console.log(
    `${s.name}: put p50 ${percentile(sorted, 50).toFixed(3)} ms, p90 ${percentile(sorted, 90).toFixed(3)} ms over ${sorted.length} puts; put thread CPU ${(s.threadNs / 1000 / s.puts).toFixed(0)} µs per put; fsynced ahead ${((100 * s.synced) / s.puts).toFixed(0)} %; ` +
      `main thread wake-ups in a put (0/1/2/3+) ${s.waits.join("/")} = ${(s.waits.reduce((a, n, i) => a + n * i, 0) / s.puts).toFixed(2)} per put, preempted ${(s.preempted / s.puts).toFixed(2)} per put, process CPU per put ${(s.blockCpuUs / s.puts).toFixed(1)} µs (from call to answer ${(s.cpuUs / s.puts).toFixed(1)})`,
  );
  s.close();
}
console.log(`load at end ${loadAverageText()}`);
