/**
 * @module The bound on the group commit's hold against a slow store
 * (runtime/engine/wal-gather-bound.ts), variants alternated round by round
 * in one process: the workload of `step-transitions.ts` (N runs of M
 * `continueNow` steps, all in flight, submitted 32 at a time) over
 * `withLatency`, one fresh store per run.
 *
 * Variants (VARIANTS, comma list): `unbounded` (the hold ends only at
 * landings and releases, as before the bound), or a share of the put
 * latency such as `0.25` (the hold ends at that share of the estimated put
 * time, never before the flush window).
 *
 * Env: N_RUNS (100), N_STEPS (10), MAX_CONCURRENT_STEPS (100), LATENCY_MS
 * (20), JITTER_MS (5), ROUNDS (8; the first two are warm-up, left out of
 * the medians), VARIANTS (unbounded,0.25,0.125).
 */
import { holdTuning } from "../runtime/engine/wal-gather-bound.js";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, withCounting, withLatency, type StepRunner } from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { median, percentile } from "./support/percentile.js";

const N_RUNS = Number(process.env.N_RUNS ?? 100);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const MAX_CONCURRENT_STEPS = Number(process.env.MAX_CONCURRENT_STEPS ?? 100);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 20);
const JITTER_MS = Number(process.env.JITTER_MS ?? 5);
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const VARIANTS = (process.env.VARIANTS ?? "unbounded,0.25,0.125").split(",");
const WARM_UP = 2;

interface Figures {
  stepsPerSec: number;
  p50: number;
  putsPerStep: number;
  cpuPerStep: number;
}

function pin(variant: string): void {
  const share = variant === "unbounded" ? Number.POSITIVE_INFINITY : Number(variant);
  holdTuning.putShare = share;
  holdTuning.maxHoldMs = variant === "unbounded" ? Number.POSITIVE_INFINITY : 50;
}

async function once(): Promise<Figures> {
  const store = withCounting(withLatency(new MemoryStore(), { ms: LATENCY_MS, jitterMs: JITTER_MS, seed: Math.floor(Math.random() * 1e9) }));
  const queue = await Queue.open(store, "bench");
  const seen = new Map<string, number[]>();
  const runner: StepRunner = {
    async runStep(s) {
      let t = seen.get(s.runId);
      if (t === undefined) seen.set(s.runId, (t = []));
      t[s.stepNumber] = performance.now();
      return s.stepNumber + 1 < N_STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
    },
  };
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).maxConcurrentSteps(MAX_CONCURRENT_STEPS).build();
  const worker = runtime.spawn();
  const payload = new Uint8Array(64).fill(7);
  const puts0 = store.counts.puts;
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  let next = 0;
  const waits: Promise<unknown>[] = [];
  await Promise.all(
    Array.from({ length: Math.min(32, N_RUNS) }, async () => {
      while (next < N_RUNS) {
        const id = `run-${next++}`;
        await runtime.submit({ input: payload, runId: id });
        waits.push(runtime.wait(id));
      }
    }),
  );
  await Promise.all(waits);
  const elapsed = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const puts = store.counts.puts - puts0;
  await worker.shutdown();
  await queue.close();
  const transitions: number[] = [];
  for (const t of seen.values()) for (let k = 1; k < t.length; k++) transitions.push(t[k]! - t[k - 1]!);
  transitions.sort((a, b) => a - b);
  const steps = N_RUNS * N_STEPS;
  return { stepsPerSec: steps / elapsed, p50: percentile(transitions, 50), putsPerStep: puts / steps, cpuPerStep: (cpu.user + cpu.system) / steps };
}

console.log(
  `gather-bound-ab: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} MAX_CONCURRENT_STEPS=${MAX_CONCURRENT_STEPS} LATENCY=${LATENCY_MS}±${JITTER_MS} ms ROUNDS=${ROUNDS}`,
);
const all = VARIANTS.map(() => [] as Figures[]);
for (let r = 0; r < ROUNDS; r++) {
  const order = VARIANTS.map((_, i) => (r % 2 === 0 ? i : VARIANTS.length - 1 - i));
  const line: string[] = [];
  for (const i of order) {
    pin(VARIANTS[i]!);
    const f = await once();
    all[i]!.push(f);
    line.push(`${VARIANTS[i]}: ${Math.round(f.stepsPerSec)} steps/s, p50 ${f.p50.toFixed(1)} ms, ${f.putsPerStep.toFixed(3)} puts/step`);
  }
  console.log(`round ${r + 1} (load ${loadAverageText()}): ${line.join("; ")}`);
}
console.log("| variant | steps/s (median) | transition p50 ms (median) | puts/step | CPU µs/step |");
console.log("|---|---|---|---|---|");
for (let i = 0; i < VARIANTS.length; i++) {
  const kept = all[i]!.slice(WARM_UP);
  const m = (f: (x: Figures) => number) => median(kept.map(f));
  console.log(
    `| ${VARIANTS[i]} | ${Math.round(m((x) => x.stepsPerSec))} | ${m((x) => x.p50).toFixed(1)} | ${m((x) => x.putsPerStep).toFixed(3)} | ${Math.round(m((x) => x.cpuPerStep))} |`,
  );
}
