/**
 * @module The cost of the telemetry points when no OpenTelemetry provider is
 * registered, against the same code with every point switched off (each
 * returns at its first check, as when `@opentelemetry/api` is not
 * installed): the step-transitions workload (N runs of M steps continued at
 * once, MemoryStore), run in interleaved A/B pairs in one process so load
 * and JIT state drift alike for both arms.
 *
 * The figure is CPU time (user + system, `process.cpuUsage`) per step, not
 * wall time: on a shared machine wall time of a run this short swings by
 * tens of percent, while the CPU the process itself spends moves far less.
 * Reports each arm's median and quartiles and the distribution of the
 * per-pair ratio (no provider / switched off).
 *
 * Env: PAIRS (30), N_RUNS (100), N_STEPS (10), FLUSH_MS (engine flush
 * window, 2), WITH_SDK (1: also a third arm with the SDK's tracer and meter
 * providers registered, exporting nowhere, to show the cost when on).
 */
import { readFile } from "node:fs/promises";
import { metrics, trace } from "@opentelemetry/api";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "../runtime/index.js";
import { setTelemetrySwitchedOff } from "../runtime/telemetry/tracing.js";
import { percentile } from "./support/percentile.js";

const PAIRS = Number(process.env.PAIRS ?? 30);
const N_RUNS = Number(process.env.N_RUNS ?? 100);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const FLUSH_MS = Number(process.env.FLUSH_MS ?? 2);
const WITH_SDK = process.env.WITH_SDK === "1";

/** CPU µs per step of one pass of the workload. */
async function pass(): Promise<number> {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "bench", { flushIntervalMs: FLUSH_MS });
  const runner: StepRunner = {
    async runStep(s) {
      return s.stepNumber + 1 < N_STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
    },
  };
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook)
    .logger({ error: (o) => console.error(o) })
    .build();
  const worker = runtime.spawn();
  const payload = new Uint8Array(64).fill(7);
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: N_RUNS }, async (_, i) => {
      await runtime.submit({ input: payload, runId: `run-${i}` });
      await runtime.wait(`run-${i}`);
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  await worker.shutdown();
  await queue.close();
  return (cpu.user + cpu.system) / (N_RUNS * N_STEPS);
}

const load = async () => (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");

async function arm(kind: "off" | "no-provider" | "sdk"): Promise<number> {
  setTelemetrySwitchedOff(kind === "off");
  if (kind === "sdk") {
    trace.setGlobalTracerProvider(new BasicTracerProvider());
    metrics.setGlobalMeterProvider(new MeterProvider());
  }
  try {
    return await pass();
  } finally {
    if (kind === "sdk") {
      trace.disable();
      metrics.disable();
    }
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${percentile(s, 50).toFixed(2)}, quartiles ${percentile(s, 25).toFixed(2)} - ${percentile(s, 75).toFixed(2)}`;
};

console.log(
  `telemetry-overhead: PAIRS=${PAIRS} N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} FLUSH_MS=${FLUSH_MS} WITH_SDK=${WITH_SDK ? 1 : 0}; load average at start ${await load()}`,
);
// Warm-up (not reported): JIT compilation of both arms' paths.
for (let i = 0; i < 3; i++) {
  await arm("off");
  await arm("no-provider");
}
const off: number[] = [];
const none: number[] = [];
const sdk: number[] = [];
const ratios: number[] = [];
for (let i = 0; i < PAIRS; i++) {
  // Alternate which arm goes first, so neither always runs on a warmer heap.
  let a: number;
  let b: number;
  if (i % 2 === 0) {
    a = await arm("off");
    b = await arm("no-provider");
  } else {
    b = await arm("no-provider");
    a = await arm("off");
  }
  off.push(a);
  none.push(b);
  ratios.push(b / a);
  if (WITH_SDK) sdk.push(await arm("sdk"));
}
console.log(`CPU µs per step, switched off (baseline): ${stats(off)}`);
console.log(`CPU µs per step, API loaded, no provider: ${stats(none)}`);
if (WITH_SDK) console.log(`CPU µs per step, SDK tracer and meter registered: ${stats(sdk)}`);
const r = [...ratios].sort((a, b) => a - b);
console.log(
  `per-pair ratio no-provider / off: median ${percentile(r, 50).toFixed(4)}, quartiles ${percentile(r, 25).toFixed(4)} - ${percentile(r, 75).toFixed(4)}, min ${r[0]!.toFixed(4)}, max ${r[r.length - 1]!.toFixed(4)}`,
);
console.log(`load average at end ${await load()}`);
