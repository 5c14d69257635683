/**
 * @module The side-by-side step workload of the CPU benches, over a built
 * checkout: 10-step runs whose runner continues at once, on a runtime with
 * `maxConcurrentSteps(64)`; each run is submitted, waited for and its
 * outcome read. step-cpu-ab.ts times it per checkout, step-key-ops.ts
 * counts the engine's operations under it; the LocalStore benches
 * (local-inflight-cpu.ts, local-step-parts.ts, local-step-trace.ts) run it
 * with runners and stores of their own through `runtimeWorkload`.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

export type Taquba = typeof import("../../runtime/index.js");

/** Steps per run of the workload. */
export const STEPS_PER_RUN = 10;

/** The runtime of a checkout built with `npm run build` (its `dist/`); `path` loads another of its modules. */
export async function loadCheckout<M = Taquba>(dir: string, path = "dist/runtime/index.js"): Promise<M> {
  return (await import(pathToFileURL(resolve(dir, path)).href)) as M;
}

/**
 * A running workload over one store: `one` runs one run to its outcome; `drive` runs `count` runs with `conc` in
 * flight and returns their latencies in ms, ascending.
 */
export interface StepWorkload {
  readonly queue: import("../../runtime/index.js").Queue;
  one(): Promise<void>;
  drive(count: number, conc: number): Promise<number[]>;
  close(): Promise<void>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Opens the workload's queue ("bench") and runtime over `store`, runs of `stepsPerRun` steps, and starts its worker. */
export async function openStepWorkload(T: Taquba, store: import("../../runtime/index.js").ObjectStore, stepsPerRun = STEPS_PER_RUN): Promise<StepWorkload> {
  return runtimeWorkload(T, await T.Queue.open(store, "bench"), store, chainRunner(T), enc.encode(`0/${stepsPerRun}`));
}

/**
 * The workload's runner: a step's payload `j/m` continues at once with `j+1/m`, and the last step (`j + 1 >= m`)
 * succeeds with `m`; a run's input is `0/m`. `T`: the runtime whose outcomes it returns.
 */
export function chainRunner(T: Pick<Taquba, "StepOutcome">): import("../../runtime/index.js").StepRunner {
  return {
    async runStep(step) {
      const [j, m] = dec.decode(step.payload).split("/").map(Number) as [number, number];
      return j + 1 >= m ? T.StepOutcome.succeed(enc.encode(String(m))) : T.StepOutcome.continueNow(enc.encode(`${j + 1}/${m}`));
    },
  };
}

/**
 * The workload's runtime (`maxConcurrentSteps(64)`, no terminal hook) over an opened `queue` and its `store`, with
 * `runner`, started: `one` submits a run of `input`, waits for it and reads its outcome, which must be a success.
 * For benches that wrap the store or open the queue with options of their own.
 */
export function runtimeWorkload(
  T: Taquba,
  queue: import("../../runtime/index.js").Queue,
  store: import("../../runtime/index.js").ObjectStore,
  runner: import("../../runtime/index.js").StepRunner,
  input: Uint8Array,
): StepWorkload {
  const runtime = T.WorkflowRuntime.builder(queue, store, runner, T.NoopTerminalHook).maxConcurrentSteps(64).build();
  const one = async () => {
    const { runId } = await runtime.submit({ input });
    await runtime.wait(runId);
    const o = await runtime.outcome(runId);
    if (o?.status !== "succeeded") throw new Error(`run ${runId} did not succeed`);
  };
  return workloadOf(queue, runtime.spawn(), one);
}

/**
 * The counting benches' drive: opens the workload on a fresh MemoryStore, warms it with 20 runs (10 in flight),
 * then runs `count` runs with `conc` in flight between `measuring(true)` and `measuring(false)`, and closes it.
 */
export async function measureOnMemoryStore(T: Taquba, count: number, conc: number, measuring: (on: boolean) => void): Promise<void> {
  const w = await openStepWorkload(T, new T.MemoryStore());
  try {
    await w.drive(20, 10);
    measuring(true);
    await w.drive(count, conc);
  } finally {
    measuring(false);
    await w.close();
  }
}

/** The workload around a started runtime: `one` runs one run to its outcome; the handle is shut down, then the queue closed. */
export function workloadOf(queue: import("../../runtime/index.js").Queue, handle: { shutdown(): Promise<void> }, one: () => Promise<void>): StepWorkload {
  return {
    queue,
    one,
    async drive(count, conc) {
      let next = 0;
      const lat: number[] = [];
      await Promise.all(
        Array.from({ length: Math.min(conc, count) }, async () => {
          while (next++ < count) {
            const t = performance.now();
            await one();
            lat.push(performance.now() - t);
          }
        }),
      );
      return lat.sort((a, b) => a - b);
    },
    async close() {
      await handle.shutdown();
      await queue.close();
    },
  };
}
