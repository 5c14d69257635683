/**
 * @module Benchmark: a sharded deployment end to end, in real processes.
 *
 * `--shards` shards (default 4) over a local directory, `--workers` worker
 * processes (default 3) sharing them with `runShardWorkers` (lease
 * `--lease` ms, default 10,000, renewals every `--renew` ms, default
 * 1,000; inbox listing every 100 ms besides the directory's change
 * notification), and `--clients` client processes (default 2) that submit
 * `--runs` runs in all (default 1,000), `--concurrency` in flight each:
 *
 * - a third wait for a signal (key `pay:{runId}`, so it meets the run on
 *   its shard), which the client sends right after the submission;
 * - a third sleep `--delay` ms (a timer) before their last step;
 * - a third end at once.
 *
 * Every run is waited for and its result checked (the signal's payload,
 * the timer's and the no-op's input): a run that ends twice, wrongly or
 * not at all is counted as an error. Printed: the time from the first
 * submission to the last end, runs/s, per kind the p50/p99 of submission
 * to end as the client saw it, the submission and signal round trips, and
 * the store requests of the workers (PUT, GET, LIST, DELETE, from
 * `withCounting`). With `--kill`, one worker is SIGKILLed when half the
 * runs have ended, and its shards are taken over by the others.
 *
 * Run: npx tsx bench/shards-mixed.ts [--runs 1000] [--shards 4] [--workers 3] [--clients 2] [--concurrency 25] [--delay 200] [--lease 10000] [--renew 1000] [--kill]
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
  createShards,
  runShardWorkers,
  serveClients,
  withCounting,
  type ObjectStore,
} from "../runtime/index.js";
import { percentile } from "./support/percentile.js";
import { withTempDir } from "./support/temp-dir.js";

const NAME = "mixed";
const STEPS = "mixed-steps";
const enc = new TextEncoder();
const dec = new TextDecoder();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

type Input = { kind: "signal" | "timer" | "noop"; n: number; delayMs?: number };

/** Step 0 waits for the signal, sleeps, or ends; step 1 ends with the signal's payload or the input. */
function buildRuntime(queue: Queue, store: ObjectStore): WorkflowRuntime {
  return WorkflowRuntime.builder(
    queue,
    store,
    {
      runStep: async (step) => {
        const input = JSON.parse(dec.decode(step.payload)) as Input;
        if (step.stepNumber === 0) {
          if (input.kind === "signal") return StepOutcome.continueOnSignal(step.payload, `pay:${step.runId}`, 120_000);
          if (input.kind === "timer") return StepOutcome.continueAfter(step.payload, input.delayMs ?? 200);
          return StepOutcome.succeed(step.payload);
        }
        if (input.kind === "signal") return step.signal ? StepOutcome.succeed(step.signal) : StepOutcome.fail("the signal never came");
        return StepOutcome.succeed(step.payload);
      },
    },
    NoopTerminalHook,
  )
    .queueName(STEPS)
    .maxConcurrentSteps(32)
    .build();
}

/** A worker process: owns its share of the shards; prints its store request counts every 500 ms. */
async function worker(dir: string, id: string, leaseMs: number, renewMs: number): Promise<void> {
  const store = withCounting(new LocalStore(dir));
  const workers = await runShardWorkers(store, NAME, {
    processId: id,
    leaseDurationMs: leaseMs,
    renewIntervalMs: renewMs,
    logger: { error: (o, m) => console.error(m, o) },
    onChange: (shard, state) => console.log(`${state} ${shard} ${Date.now()}`),
    start: async ({ storeName, term }) => {
      const guarded = term.guard(store);
      const queue = await Queue.open(guarded, storeName, { flushIntervalMs: 2 });
      const runtime = buildRuntime(queue, guarded);
      const handle = runtime.spawn();
      const inbox = serveClients(queue, runtime, { store: guarded, listIntervalMs: 100 });
      queue.onClosed((reason) => reason && term.stepDown(reason));
      return {
        stop: async () => {
          await inbox.stop();
          await handle.shutdown();
          await queue.close();
        },
      };
    },
  });
  const counts = () => console.log(`counts ${JSON.stringify(store.counts)}`);
  const timer = setInterval(counts, 500);
  console.log("ready");
  process.stdin.resume();
  await new Promise<void>((resolve) => process.stdin.on("end", resolve));
  clearInterval(timer);
  await workers.stop();
  counts();
}

/** A client process: submits its runs, signals the waiting ones, waits for all; one JSON line per run. */
async function client(dir: string, tag: string, runs: number, concurrency: number, delayMs: number): Promise<void> {
  // A request stays in the inbox until an owner applies it: wait long rather than give up during a takeover.
  const c = await TaqubaClient.open(new LocalStore(dir), { name: NAME, queueName: STEPS, timeoutMs: 900_000 });
  let next = 0;
  console.log(`start ${Date.now()}`);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        const n = next++;
        const kind = (["signal", "timer", "noop"] as const)[n % 3]!;
        const runId = `${tag}-${n}`;
        const input: Input = { kind, n, ...(kind === "timer" ? { delayMs } : {}) };
        const line: Record<string, unknown> = { runId, kind };
        try {
          const t0 = Date.now();
          await c.submit({ runId, input: enc.encode(JSON.stringify(input)) });
          line.submitMs = Date.now() - t0;
          if (kind === "signal") {
            const t1 = Date.now();
            await c.signal(`pay:${runId}`, enc.encode(`paid ${runId}`));
            line.signalMs = Date.now() - t1;
          }
          const end = await c.wait(runId);
          line.endMs = Date.now() - t0;
          const result = end.outcome?.result === undefined ? undefined : dec.decode(end.outcome.result);
          const expected = kind === "signal" ? `paid ${runId}` : JSON.stringify(input);
          line.ok = end.termination.status === "succeeded" && result === expected;
        } catch (e) {
          line.error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
        }
        console.log(JSON.stringify(line));
      }
    }),
  );
  await c.close();
  console.log("done");
}

interface Child {
  proc: ChildProcess;
  lines: string[];
  exited: Promise<void>;
}

function start(args: string[], readyLine: string | undefined): Promise<Child> {
  const proc = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise<void>((r) => proc.on("exit", () => r()));
  const child: Child = { proc, lines: [], exited };
  let partial = "";
  return new Promise((resolve, reject) => {
    if (readyLine === undefined) resolve(child);
    proc.stdout!.on("data", (d: Buffer) => {
      const parts = (partial + d.toString()).split("\n");
      partial = parts.pop()!;
      child.lines.push(...parts);
      if (readyLine !== undefined && parts.includes(readyLine)) resolve(child);
    });
    proc.on("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}`)));
  });
}

function owned(workers: Child[]): number {
  let n = 0;
  for (const w of workers) {
    if (w.proc.exitCode !== null || w.proc.signalCode !== null) continue;
    const mine = new Set<number>();
    for (const l of w.lines) {
      const [state, shard] = l.split(" ");
      if (state === "owner") mine.add(Number(shard));
      else if (state === "standby" || state === "stopped") mine.delete(Number(shard));
    }
    n += mine.size;
  }
  return n;
}

const lastCounts = (c: Child): Record<string, number> => {
  for (let i = c.lines.length - 1; i >= 0; i--) if (c.lines[i]!.startsWith("counts ")) return JSON.parse(c.lines[i]!.slice(7)) as Record<string, number>;
  return {};
};

async function main(o: {
  runs: number;
  shards: number;
  workers: number;
  clients: number;
  concurrency: number;
  delay: number;
  kill: boolean;
  lease: number;
  renew: number;
}): Promise<void> {
  await withTempDir("taquba-bench-mixed-", async (dir) => {
    await createShards(new LocalStore(dir), NAME, o.shards);
    const workers = await Promise.all(
      Array.from({ length: o.workers }, (_, i) => start(["--worker", dir, `w${i}`, String(o.lease), String(o.renew)], "ready")),
    );
    try {
      const settleFrom = Date.now();
      while (owned(workers) < o.shards) await new Promise((r) => setTimeout(r, 50));
      console.log(`shards owned after ${Date.now() - settleFrom} ms`);
      const before = workers.map(lastCounts);
      const per = Math.ceil(o.runs / o.clients);
      const clients = await Promise.all(
        Array.from({ length: o.clients }, (_, i) =>
          start(["--client", dir, `c${i}`, String(Math.min(per, o.runs - i * per)), String(o.concurrency), String(o.delay)], undefined),
        ),
      );
      let killed = false;
      const handoffs = () => workers.reduce((n, w) => n + w.lines.filter((l) => l.startsWith("owner ")).length, 0);
      const handoffsBefore = handoffs();
      const ended = () => clients.reduce((n, c) => n + c.lines.filter((l) => l.startsWith("{")).length, 0);
      while (!clients.every((c) => c.lines.includes("done"))) {
        if (o.kill && !killed && ended() >= o.runs / 2) {
          killed = true;
          workers[0]!.proc.kill("SIGKILL");
          console.log(`SIGKILLed worker w0 after ${ended()} runs ended`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      // From the first submission (after the client processes started), not from their start-up.
      const t0 = Math.min(...clients.map((c) => Number(c.lines.find((l) => l.startsWith("start "))!.slice(6))));
      const wall = Date.now() - t0;
      const lines = clients.flatMap((c) => c.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>));
      const wrong = lines.filter((l) => l.ok === false);
      const failed = lines.filter((l) => l.error !== undefined);
      const bad = [...wrong, ...failed];
      const ids = new Set(lines.map((l) => l.runId));
      console.log(
        `${o.runs} runs (signal, timer ${o.delay} ms, no-op), ${o.shards} shards, ${o.workers} worker processes (lease ${o.lease} ms, renewals ${o.renew} ms), ${o.clients} client processes x ${o.concurrency} in flight${o.kill ? ", one worker SIGKILLed half way" : ""}`,
      );
      console.log(
        `  ${lines.length} ended (${ids.size} distinct), ${wrong.length} with a wrong result, ${failed.length} the client gave up on; ${wall} ms first submission to last end, ${((lines.length * 1000) / wall).toFixed(1)} runs/s`,
      );
      for (const b of bad.slice(0, 5)) console.log(`  wrong: ${JSON.stringify(b)}`);
      const ms = (k: string, f: (l: Record<string, unknown>) => boolean) => {
        const v = lines
          .filter(f)
          .map((l) => l[k])
          .filter((x): x is number => typeof x === "number")
          .sort((a, b) => a - b);
        return v.length === 0 ? "-" : `p50 ${percentile(v, 50).toFixed(0)} ms, p99 ${percentile(v, 99).toFixed(0)} ms`;
      };
      console.log(`  shard claims during the run (a lease lost or handed over, then claimed): ${handoffs() - handoffsBefore}`);
      for (const kind of ["signal", "timer", "noop"]) console.log(`  ${kind}: submission to end ${ms("endMs", (l) => l.kind === kind)}`);
      console.log(`  submission round trip ${ms("submitMs", () => true)}; signal round trip ${ms("signalMs", (l) => l.kind === "signal")}`);
      await new Promise((r) => setTimeout(r, 600));
      const sum: Record<string, number> = {};
      for (const [i, w] of workers.entries()) for (const [k, v] of Object.entries(lastCounts(w))) sum[k] = (sum[k] ?? 0) + v - (before[i]![k] ?? 0);
      console.log(
        `  worker store requests during the run: ${sum.puts ?? 0} PUT, ${sum.gets ?? 0} GET, ${sum.lists ?? 0} LIST, ${sum.deletes ?? 0} DELETE (${(((sum.puts ?? 0) + (sum.gets ?? 0) + (sum.lists ?? 0) + (sum.deletes ?? 0)) / Math.max(1, lines.length)).toFixed(1)} per run)`,
      );
    } finally {
      for (const w of workers) if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.stdin!.end();
      await Promise.all(workers.map((w) => w.exited));
    }
  });
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    worker: { type: "boolean" },
    client: { type: "boolean" },
    runs: { type: "string", default: "1000" },
    shards: { type: "string", default: "4" },
    workers: { type: "string", default: "3" },
    clients: { type: "string", default: "2" },
    concurrency: { type: "string", default: "25" },
    delay: { type: "string", default: "200" },
    kill: { type: "boolean", default: false },
    lease: { type: "string", default: "10000" },
    renew: { type: "string", default: "1000" },
  },
});
if (values.worker) {
  const [dir, id, lease, renew] = positionals as [string, string, string, string];
  await worker(dir, id, Number(lease), Number(renew));
} else if (values.client) {
  const [dir, tag, runs, conc, delay] = positionals as [string, string, string, string, string];
  await client(dir, tag, Number(runs), Number(conc), Number(delay));
} else {
  console.log(`load average before: ${load()}`);
  await main({
    runs: Number(values.runs),
    shards: Number(values.shards),
    workers: Number(values.workers),
    clients: Number(values.clients),
    concurrency: Number(values.concurrency),
    delay: Number(values.delay),
    kill: values.kill,
    lease: Number(values.lease),
    renew: Number(values.renew),
  });
  console.log(`load average after: ${load()}`);
}
