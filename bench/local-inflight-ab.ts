/**
 * @module The side-by-side workload at 50 in flight (runs of N_STEPS no-op
 * steps that continue at once, CONC in flight) over a LocalStore, for
 * several checkouts in one process, round by round in alternating order
 * (reversed every other round), each round on a fresh store. Per round and
 * checkout: steps/s, the process's CPU per step (`process.cpuUsage`, every
 * thread), the main thread's CPU per step (Linux schedstat), the main
 * thread's voluntary context switches per WAL put (each a wait that ended
 * in a wake-up: for the answer, or for a lock), WAL puts per step, commits per put, bytes per put and the share of puts whose
 * temporary file the put thread fsynced ahead; with `STRACE=1` also the system
 * calls of the timed runs per step, every thread (`strace -c -f` attached
 * to the process for the timed runs only): fsyncs, links, renames, opens,
 * writes, stats, unlinks and futex calls. At the end, each checkout's
 * medians over the rounds after the first two.
 *
 * Usage: `npx tsx bench/local-inflight-ab.ts <checkout> [<checkout> ...]`,
 * each a directory whose `runtime/` is measured; `<checkout>:memory`
 * measures that checkout over a MemoryStore instead, for the store path's
 * share; `<checkout>:cohorts=N` opens its engine with `walCohorts` N (the
 * same checkout may be given with several); `<checkout>:second` opens its
 * LocalStore with `secondPutThread`. Env: N_RUNS (200), N_STEPS (10), CONC (50), ROUNDS (8), STRACE.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";
import { runtimeWorkload, type Taquba } from "./support/step-workload.js";

const N_RUNS = Number(process.env.N_RUNS ?? 200);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const CONC = Number(process.env.CONC ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const STRACE = process.env.STRACE === "1";
/** Rounds left out of the medians: the first ones warm the code up. */
const WARM_UP_ROUNDS = 2;
/** The system calls counted with STRACE=1, as the report names them. */
const COUNTED = ["fsync", "fdatasync", "link", "rename", "openat", "pwrite64", "write", "statx", "unlink", "close", "futex", "epoll_pwait"] as const;

const args = process.argv.slice(2);
if (args.length === 0) throw new Error("usage: npx tsx bench/local-inflight-ab.ts <checkout>[:memory] [<checkout>[:memory] ...]");
if (STRACE && spawnSync("strace", ["-V"]).status !== 0) throw new Error("STRACE=1 needs strace on the PATH");

/** The main thread's nanoseconds on a CPU so far (Linux schedstat). */
function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

/** The main thread's voluntary context switches so far: each time it blocked and was woken again. */
function mainThreadWaits(): number {
  const status = readFileSync(`/proc/self/task/${process.pid}/status`, "utf8");
  return Number(/voluntary_ctxt_switches:\s*(\d+)/.exec(status)?.[1] ?? Number.NaN);
}

/** Attaches `strace -c -f` to this process; `stop()` detaches it and returns its counts by call. */
async function traceCalls(): Promise<{ stop(): Promise<Map<string, number>> }> {
  const out = join(mkdtempSync(join(tmpdir(), "bench-inflight-strace-")), "counts");
  const child: ChildProcess = spawn("strace", ["-c", "-f", "-o", out, "-p", String(process.pid)], { stdio: ["ignore", "ignore", "pipe"] });
  // strace says on stderr when it has attached to every thread.
  await new Promise<void>((done, fail) => {
    let said = "";
    child.stderr!.on("data", (b: Buffer) => {
      said += b.toString();
      if (/attached/i.test(said)) done();
    });
    child.once("exit", (code) => fail(new Error(`strace exited (${code}): ${said}`)));
  });
  return {
    async stop() {
      const exited = new Promise<void>((done) => child.once("exit", () => done()));
      child.kill("SIGINT");
      await exited;
      const counts = new Map<string, number>();
      for (const line of readFileSync(out, "utf8").split("\n")) {
        const f = line.trim().split(/\s+/);
        // % time, seconds, usecs/call, calls, [errors,] syscall
        if (f.length >= 5 && /^\d/.test(f[0]!) && /^\d+$/.test(f[3]!)) counts.set(f[f.length - 1]!, Number(f[3]));
      }
      rmSync(join(out, ".."), { recursive: true, force: true });
      return counts;
    },
  };
}

interface Figures {
  rate: number[];
  cpu: number[];
  mainCpu: number[];
  waitsPerPut: number[];
  puts: number[];
  calls: Map<string, number>[];
}

interface Subject {
  name: string;
  round(): Promise<string>;
  figures: Figures;
}

const runner = (T: Taquba) => ({
  async runStep(s: { stepNumber: number; payload: Uint8Array }) {
    return s.stepNumber + 1 < N_STEPS ? T.StepOutcome.continueNow(s.payload) : T.StepOutcome.succeed(s.payload);
  },
});

const subjects: Subject[] = [];
for (const arg of args) {
  const cohortsSetting = /:cohorts=(\d+)/.exec(arg)?.[1];
  const cohorts = cohortsSetting === undefined ? undefined : Number(cohortsSetting);
  const second = arg.includes(":second");
  const bare = arg.replace(/:cohorts=\d+/, "").replace(":second", "");
  const memory = bare.endsWith(":memory");
  const checkout = resolve(bare.replace(/:memory$/, ""));
  const T = (await import(pathToFileURL(join(checkout, "runtime/index.ts")).href)) as Taquba;
  // The checkout's put thread, for the files it fsynced ahead (checkouts before that count have none).
  const thread = (
    (await import(pathToFileURL(join(checkout, "runtime/store/local-put-thread.ts")).href)) as { sharedPutThread(): { syncedAhead?: number } }
  ).sharedPutThread();
  const figures: Figures = { rate: [], cpu: [], mainCpu: [], waitsPerPut: [], puts: [], calls: [] };
  subjects.push({
    name: arg,
    figures,
    async round() {
      const dir = mkdtempSync(join(tmpdir(), "bench-inflight-ab-"));
      try {
        const store = memory ? new T.MemoryStore() : new T.LocalStore(dir, second ? { secondPutThread: true } : {});
        const queue = await T.Queue.open(store, "bench", cohorts === undefined ? {} : { engineOptions: { walCohorts: cohorts } });
        const w = runtimeWorkload(T, queue, store, runner(T), new Uint8Array(16).fill(7));
        for (let i = 0; i < 10; i++) await w.one();
        await w.drive(50, CONC);
        const stats0 = queue.engineStats;
        const synced0 = thread.syncedAhead;
        const trace = STRACE ? await traceCalls() : undefined;
        const cpu0 = process.cpuUsage();
        const main0 = mainThreadNs();
        const waits0 = mainThreadWaits();
        const start = performance.now();
        await w.drive(N_RUNS, CONC);
        const wall = performance.now() - start;
        const main = mainThreadNs() - main0;
        const waits = mainThreadWaits() - waits0;
        const cpu = process.cpuUsage(cpu0);
        const calls = await trace?.stop();
        const stats1 = queue.engineStats;
        const synced = synced0 === undefined ? undefined : thread.syncedAhead! - synced0;
        await w.close();
        const steps = N_RUNS * N_STEPS;
        const puts = stats1.walPuts - stats0.walPuts;
        figures.rate.push(steps / (wall / 1000));
        figures.cpu.push((cpu.user + cpu.system) / steps);
        figures.mainCpu.push(main / 1000 / steps);
        figures.puts.push(puts / steps);
        figures.waitsPerPut.push(waits / puts);
        if (calls) figures.calls.push(calls);
        const perStep = calls ? `; calls/step ${COUNTED.map((c) => `${c} ${((calls.get(c) ?? 0) / steps).toFixed(3)}`).join(", ")}` : "";
        return (
          `${Math.round(steps / (wall / 1000))} steps/s, CPU ${((cpu.user + cpu.system) / steps).toFixed(1)} µs/step (main thread ${(main / 1000 / steps).toFixed(1)}, its wake-ups/put ${(waits / puts).toFixed(2)}), ` +
          `WAL puts/step ${(puts / steps).toFixed(4)}, commits/put ${((stats1.walBatches - stats0.walBatches) / puts).toFixed(1)}, bytes/put ${Math.round((stats1.walBytes - stats0.walBytes) / puts)}, ` +
          `puts with their file fsynced ahead ${synced === undefined ? "-" : `${((100 * synced) / puts).toFixed(0)} %`}${perStep}`
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  });
}

console.log(`local-inflight-ab: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} CONC=${CONC} ROUNDS=${ROUNDS} STRACE=${STRACE ? 1 : 0}`);
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? subjects : [...subjects].reverse();
  for (const s of order) console.log(`round ${r + 1} (load ${loadAverageText()}) ${s.name}: ${await s.round()}`);
}
for (const s of subjects) {
  const f = s.figures;
  const kept = <T>(xs: T[]) => xs.slice(Math.min(WARM_UP_ROUNDS, xs.length - 1));
  const calls = kept(f.calls);
  const callText = calls.length
    ? `; calls/step (medians) ${COUNTED.map((c) => `${c} ${median(calls.map((m) => (m.get(c) ?? 0) / (N_RUNS * N_STEPS))).toFixed(3)}`).join(", ")}`
    : "";
  console.log(
    `median after ${WARM_UP_ROUNDS} rounds ${s.name}: ${Math.round(median(kept(f.rate)))} steps/s, CPU ${median(kept(f.cpu)).toFixed(1)} µs/step (main thread ${median(kept(f.mainCpu)).toFixed(1)}, its wake-ups/put ${median(kept(f.waitsPerPut)).toFixed(2)}), WAL puts/step ${median(kept(f.puts)).toFixed(4)}${callText}`,
  );
}
