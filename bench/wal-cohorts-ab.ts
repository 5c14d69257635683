/**
 * @module `walCohorts` settings alternated round by round in one process,
 * on the side-by-side workload (runs of 10 steps that continue at once,
 * CONC in flight, each round on a fresh store): steps/s, the main thread's
 * CPU per step (/proc/self/task/<pid>/schedstat, Linux), WAL puts per step
 * and commits per put, and the load beside each round; then each setting's
 * medians per store.
 *
 * Env: COHORTS ("1,2"), STORES ("local,memory"), N_RUNS (300), CONC (50),
 * ROUNDS (6 per setting and store), WARM_ROUNDS (1 per setting and store).
 * Usage: `npx tsx bench/wal-cohorts-ab.ts`.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import * as T from "../runtime/index.js";
import { LocalStore, MemoryStore, Queue, type ObjectStore } from "../runtime/index.js";
import { median } from "./support/percentile.js";
import { STEPS_PER_RUN, runtimeWorkload } from "./support/step-workload.js";
import { withTempDir } from "./support/temp-dir.js";

const COHORTS = (process.env.COHORTS ?? "1,2").split(",").map(Number);
const STORES = (process.env.STORES ?? "local,memory").split(",");
const N_RUNS = Number(process.env.N_RUNS ?? 300);
const CONC = Number(process.env.CONC ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const WARM_ROUNDS = Number(process.env.WARM_ROUNDS ?? 1);

/** The main thread's nanoseconds on a CPU. */
function mainCpuNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const runner: T.StepRunner = {
  async runStep(step) {
    const [j, m] = dec.decode(step.payload).split("/").map(Number) as [number, number];
    return j + 1 >= m ? T.StepOutcome.succeed(enc.encode(String(m))) : T.StepOutcome.continueNow(enc.encode(`${j + 1}/${m}`));
  },
};

interface Round {
  rate: number;
  mainUs: number;
  putsPerStep: number;
  commitsPerPut: number;
  load: number;
}

async function round(kind: string, cohorts: number): Promise<Round> {
  const go = async (store: ObjectStore): Promise<Round> => {
    const queue = await Queue.open(store, "bench", { engineOptions: { walCohorts: cohorts } });
    const w = runtimeWorkload(T, queue, store, runner, enc.encode(`0/${STEPS_PER_RUN}`));
    try {
      for (let i = 0; i < 10; i++) await w.one();
      const s0 = queue.engineStats;
      const cpu0 = mainCpuNs();
      const start = performance.now();
      await w.drive(N_RUNS, CONC);
      const wall = performance.now() - start;
      const cpu = mainCpuNs() - cpu0;
      const s1 = queue.engineStats;
      const steps = N_RUNS * STEPS_PER_RUN;
      const puts = s1.walPuts - s0.walPuts;
      return {
        rate: steps / (wall / 1000),
        mainUs: cpu / 1000 / steps,
        putsPerStep: puts / steps,
        commitsPerPut: (s1.walBatches - s0.walBatches) / puts,
        load: loadavg()[0]!,
      };
    } finally {
      await w.close();
    }
  };
  if (kind === "memory") return go(new MemoryStore());
  return withTempDir("bench-wal-cohorts-", (dir) => go(new LocalStore(dir)));
}

console.log(
  `wal-cohorts-ab: COHORTS=${COHORTS.join(",")} STORES=${STORES.join(",")} N_RUNS=${N_RUNS} CONC=${CONC} ROUNDS=${ROUNDS} WARM_ROUNDS=${WARM_ROUNDS}`,
);
const results = new Map<string, Round[]>();
for (let r = 0; r < WARM_ROUNDS + ROUNDS; r++) {
  for (const kind of STORES) {
    // Each round starts with the other setting first, so neither always runs on a machine the other just warmed.
    const order = r % 2 === 0 ? COHORTS : [...COHORTS].reverse();
    for (const cohorts of order) {
      const got = await round(kind, cohorts);
      if (r < WARM_ROUNDS) continue;
      const label = `${kind} walCohorts ${cohorts}`;
      results.set(label, [...(results.get(label) ?? []), got]);
      console.log(
        `${label}, load ${got.load.toFixed(2)}: ${Math.round(got.rate)} steps/s, main CPU ${got.mainUs.toFixed(1)} µs/step, WAL puts/step ${got.putsPerStep.toFixed(4)}, commits/put ${got.commitsPerPut.toFixed(1)}`,
      );
    }
  }
}
for (const [label, rounds] of results) {
  console.log(
    `${label}: medians of ${rounds.length} rounds: ${Math.round(median(rounds.map((x) => x.rate)))} steps/s (rounds ${rounds.map((x) => Math.round(x.rate)).join(", ")}), main CPU ${median(rounds.map((x) => x.mainUs)).toFixed(1)} µs/step, WAL puts/step ${median(rounds.map((x) => x.putsPerStep)).toFixed(4)}, load ${Math.min(...rounds.map((x) => x.load)).toFixed(1)}-${Math.max(...rounds.map((x) => x.load)).toFixed(1)}`,
  );
}
