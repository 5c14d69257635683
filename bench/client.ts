/**
 * @module Benchmark: commands from a second process through the client
 * inbox.
 *
 * A child process owns the store (queue, runtime with a no-op step runner,
 * `serveClients`); this process is a `TaqubaClient` that submits no-op runs
 * one after another and measures, per run:
 * - submit-to-applied: from `submit()` to its answer (the owner has listed
 *   the request, committed the run durably and written the answer, and the
 *   client has read it);
 * - submit-to-result: from `submit()` to `wait()` returning the run's end.
 * Over a local directory (the owner and the client are woken by `fs.watch`)
 * and over the same directory behind `withLatency` (every store call 20 ms,
 * as S3 from a nearby region; no notification, so the owner lists every
 * `--list` ms and the client polls).
 *
 * Run: npx tsx bench/client.ts [--runs 200] [--latency-runs 60] [--list 1000] [--poll 200]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  LocalStore,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  TaqubaClient,
  WorkflowRuntime,
  serveClients,
  withLatency,
  type ObjectStore,
} from "../runtime/index.js";
import { percentile } from "./support/percentile.js";
import { withTempDir } from "./support/temp-dir.js";

const STORE_NAME = "bench";
const STEPS = "bench-steps";

function storeOf(dir: string, latencyMs: number): ObjectStore {
  const local = new LocalStore(dir);
  return latencyMs > 0 ? withLatency(local, { ms: latencyMs }) : local;
}

/** The owner process: serves until its stdin closes. */
async function owner(dir: string, latencyMs: number, listMs: number): Promise<void> {
  const store = storeOf(dir, latencyMs);
  const queue = await Queue.open(store, STORE_NAME, { flushIntervalMs: 2 });
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (step) => StepOutcome.succeed(step.payload) }, NoopTerminalHook)
    .queueName(STEPS)
    .build();
  const worker = runtime.spawn();
  const inbox = serveClients(queue, runtime, { store, listIntervalMs: listMs });
  console.log("ready");
  process.stdin.resume();
  await new Promise<void>((resolve) => process.stdin.on("end", resolve));
  await inbox.stop();
  await worker.shutdown();
  await queue.close();
}

function startOwner(dir: string, latencyMs: number, listMs: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--owner", dir, String(latencyMs), String(listMs)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      if (d.toString().includes("ready")) resolve(child);
    });
    child.on("exit", (code) => reject(new Error(`the owner exited with ${code}`)));
  });
}

const ms = (n: number) => `${n.toFixed(1)} ms`;

function measure(label: string, latencyMs: number, runs: number, listMs: number, pollMs: number): Promise<void> {
  return withTempDir("taquba-bench-client-", (dir) => measureIn(dir, label, latencyMs, runs, listMs, pollMs));
}

async function measureIn(dir: string, label: string, latencyMs: number, runs: number, listMs: number, pollMs: number): Promise<void> {
  const child = await startOwner(dir, latencyMs, listMs);
  const client = await TaqubaClient.open(storeOf(dir, latencyMs), { name: STORE_NAME, queueName: STEPS, pollIntervalMs: pollMs });
  const applied: number[] = [];
  const result: number[] = [];
  const input = new TextEncoder().encode("{}");
  try {
    for (let i = 0; i < runs + 3; i++) {
      const t0 = performance.now();
      const { runId } = await client.submit({ input });
      const t1 = performance.now();
      await client.wait(runId);
      const t2 = performance.now();
      // The first runs warm up both processes.
      if (i < 3) continue;
      applied.push(t1 - t0);
      result.push(t2 - t0);
    }
  } finally {
    await client.close();
    child.stdin!.end();
    await new Promise((r) => child.on("exit", r));
  }
  applied.sort((a, b) => a - b);
  result.sort((a, b) => a - b);
  console.log(
    `${label}: ${runs} no-op runs, one at a time; submit-to-applied p50 ${ms(percentile(applied, 50))} p99 ${ms(percentile(applied, 99))}; ` +
      `submit-to-result p50 ${ms(percentile(result, 50))} p99 ${ms(percentile(result, 99))}`,
  );
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    owner: { type: "boolean" },
    runs: { type: "string", default: "200" },
    "latency-runs": { type: "string", default: "60" },
    list: { type: "string", default: "1000" },
    poll: { type: "string", default: "200" },
  },
});
if (values.owner) {
  const [dir, latency, list] = positionals as [string, string, string];
  await owner(dir, Number(latency), Number(list));
} else {
  const list = Number(values.list);
  const poll = Number(values.poll);
  console.log(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  await measure("LocalStore (fs.watch)", 0, Number(values.runs), 5000, 1000);
  await measure(`withLatency 20 ms (owner lists every ${list} ms, client polls from 10 ms up to ${poll} ms)`, 20, Number(values["latency-runs"]), list, poll);
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
}
