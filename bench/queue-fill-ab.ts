/**
 * @module The batched fill of `bench/queue-drain.ts` alone, for two or more
 * compiled checkouts, alternating round by round in one process: a fresh
 * queue over a `MemoryStore` (`flushIntervalMs: 2`, as there), `WARMUP`
 * jobs enqueued and drained, then `JOBS` jobs of 64 B with no options
 * enqueued by `enqueueBatch` in batches of `BATCH`, one batch in flight.
 * Prints per round and checkout enqueues per second (wall) and CPU per job
 * (`process.cpuUsage`, which includes the engine's commits and merges in the
 * same process), with the load average, then the medians of the rounds
 * after the first. With `CPU_PROF=<dir>` it profiles each checkout's fills
 * alone instead (`node:inspector`), one `.cpuprofile` per checkout. With
 * `COUNT=1` it counts instead, per job of one fill: the engine's `get` and
 * `has` calls by the key's first character, and (where the checkout has
 * key runs) the runs' filter probes by outcome.
 *
 * Run: `npm run build` in each checkout, then
 * `JOBS=100000 ROUNDS=6 npx tsx bench/queue-fill-ab.ts <checkout A> <checkout B>`.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { median } from "./support/percentile.js";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout } from "./support/step-workload.js";

type Taquba = typeof import("../runtime/index.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const JOBS = env("JOBS", 100_000);
const ROUNDS = env("ROUNDS", 6);
const BATCH = env("BATCH", 1000);
const WARMUP = env("WARMUP", 2000);
const CPU_PROF = process.env.CPU_PROF;
const COUNT = process.env.COUNT === "1";

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout<Taquba>(d));

const payload = new Uint8Array(64).fill(1);

interface Figures {
  jobsPerSec: number;
  cpuNsPerJob: number;
}

async function fill(queue: import("../runtime/index.js").Queue, jobs: number): Promise<void> {
  for (let i = 0; i < jobs; i += BATCH) {
    const n = Math.min(BATCH, jobs - i);
    await queue.enqueueBatch(Array.from({ length: n }, () => ({ queueName: "jobs", payload })));
  }
}

async function measure(t: Taquba, session?: Session): Promise<Figures> {
  const queue = await t.Queue.open(new t.MemoryStore(), "fill", { flushIntervalMs: 2 });
  try {
    await fill(queue, WARMUP);
    for (let job = await queue.claim("jobs"); job !== null; job = await queue.claim("jobs")) await queue.ack(job);
    if (session) await session.post("Profiler.start");
    const wall0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    await fill(queue, JOBS);
    const cpu = process.cpuUsage(cpu0);
    const wallNs = Number(process.hrtime.bigint() - wall0);
    return { jobsPerSec: (JOBS * 1e9) / wallNs, cpuNsPerJob: ((cpu.user + cpu.system) * 1000) / JOBS };
  } finally {
    await queue.close();
  }
}

/** The filter counters of a checkout's key runs, absent before key runs. */
interface ProbeCounters {
  countFilterProbes(): void;
  filterProbeCounts(): { first: string; counts: readonly number[] }[];
}

async function probeCounters(dir: string): Promise<ProbeCounters | undefined> {
  try {
    const m = await loadCheckout<Partial<ProbeCounters>>(dir, "dist/runtime/engine/key-run-tally.js");
    return m.countFilterProbes && m.filterProbeCounts ? (m as ProbeCounters) : undefined;
  } catch {
    return undefined;
  }
}

/** One fill per checkout, counting its engine reads and filter probes (wrapping `Engine.prototype` while it runs). */
async function count(t: Taquba, dir: string): Promise<void> {
  const calls = new Map<string, number>();
  const proto = t.Engine.prototype as unknown as Record<"get" | "has", (key: string) => unknown>;
  const real = { get: proto.get, has: proto.has };
  for (const name of ["get", "has"] as const) {
    proto[name] = function (this: unknown, key: string) {
      const k = `${name} ${key.slice(0, 2)}`;
      calls.set(k, (calls.get(k) ?? 0) + 1);
      return real[name]!.call(this, key);
    };
  }
  const probes = await probeCounters(dir);
  const queue = await t.Queue.open(new t.MemoryStore(), "fill", { flushIntervalMs: 2 });
  try {
    await fill(queue, WARMUP);
    for (let job = await queue.claim("jobs"); job !== null; job = await queue.claim("jobs")) await queue.ack(job);
    calls.clear();
    probes?.countFilterProbes();
    await fill(queue, JOBS);
  } finally {
    Object.assign(proto, real);
    await queue.close();
  }
  const perJob = (n: number) => (n / JOBS).toFixed(3);
  console.log(`${dir}: engine reads per job: ${[...calls].map(([k, n]) => `${k} ${perJob(n)}`).join(", ") || "none"}`);
  if (probes === undefined) console.log(`${dir}: no key runs`);
  else
    for (const { first, counts } of probes.filterProbeCounts())
      console.log(`${dir}: filter probes per job of keys "${first}", by outcome (key-run-tally.ts order): ${counts.map(perJob).join(" ")}`);
}

console.log(`queue-fill-ab: jobs=${JOBS} batch=${BATCH} warmup=${WARMUP} rounds=${ROUNDS} payload=64 B, MemoryStore, checkouts: ${dirs.join(", ")}`);
if (COUNT) {
  for (let c = 0; c < mods.length; c++) await count(mods[c]!, dirs[c]!);
} else if (CPU_PROF !== undefined) {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  for (let c = 0; c < mods.length; c++) {
    // One profile per checkout: its rounds only, the profiler stopped between them.
    let profile: unknown;
    for (let r = 0; r < ROUNDS; r++) {
      await measure(mods[c]!, session);
      ({ profile } = await session.post("Profiler.stop"));
    }
    const file = join(CPU_PROF, `fill-${c}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    console.log(`${dirs[c]}: last round's profile in ${file}`);
  }
  session.disconnect();
} else {
  const all: Figures[][] = mods.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which checkout goes first, so neither always runs after the other's garbage.
    const order = r % 2 === 0 ? mods.map((_, i) => i) : mods.map((_, i) => mods.length - 1 - i);
    for (const c of order) {
      const f = await measure(mods[c]!);
      all[c]!.push(f);
      console.log(
        `round ${r + 1} ${dirs[c]}: ${Math.round(f.jobsPerSec).toLocaleString("en-US")} enqueues/s, ${(f.cpuNsPerJob / 1000).toFixed(2)} µs CPU/job (load ${loadAverageText()})`,
      );
    }
  }
  for (let c = 0; c < mods.length; c++) {
    const kept = all[c]!.slice(1);
    console.log(
      `median of rounds 2-${ROUNDS}, ${dirs[c]}: ${Math.round(median(kept.map((f) => f.jobsPerSec))).toLocaleString("en-US")} enqueues/s, ${(median(kept.map((f) => f.cpuNsPerJob)) / 1000).toFixed(2)} µs CPU/job`,
    );
  }
}
