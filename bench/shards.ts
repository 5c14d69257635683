/**
 * @module Benchmark: shards and owner election.
 *
 * 1. Throughput: no-op workflow steps per second on a store where every
 *    call takes 20 ms (`withLatency` over a local directory, as S3 from a
 *    nearby region), with 1, 2 and 4 shards owned by as many worker
 *    processes (lease 3 s, renewals 0.5 s, inbox listing every 100 ms).
 *    Once the processes own one shard each, a client submits `--runs` runs
 *    of `--steps` steps (50 submissions in flight; the router spreads them
 *    by run id); the clock runs from the first submission to the last
 *    step, as the workers report it. The ratio is to 1 shard in the same
 *    invocation. Each `--inbox` value (the owners' `maxConcurrentRequests`;
 *    1 applies the inbox requests one at a time) gets its own pass, so a
 *    before/after comparison shares one run and one machine state.
 * 2. Takeover: two worker processes over one store (no latency), lease
 *    `--lease` ms and renewals every `--renew` ms; the owner is SIGKILLed
 *    `--kills` times and the time from the kill to the standby's claim is
 *    recorded (p50, max).
 * 3. Idle requests: two worker processes sharing 4 shards (2 each) at the
 *    default timings (lease 15 s, renewals 5 s, inbox listing every 1 s),
 *    counted for `--idle` seconds and scaled to an hour.
 *
 * Run: npx tsx bench/shards.ts [--runs 200] [--steps 5] [--lease 3000] [--renew 500] [--kills 5] [--idle 30] [--inbox 1,32] [--only throughput|takeover|idle]
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
  WorkflowRuntime,
  createShards,
  runShardWorkers,
  serveClients,
  TaqubaClient,
  withCounting,
  withLatency,
  type ObjectStore,
} from "../runtime/index.js";
import { percentile } from "./support/percentile.js";
import { withTempDir } from "./support/temp-dir.js";

const NAME = "bench";
const STEPS = "bench-steps";
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

function storeOf(dir: string, latencyMs: number): ObjectStore {
  const local = new LocalStore(dir);
  return latencyMs > 0 ? withLatency(local, { ms: latencyMs }) : local;
}

/** A runtime whose runs take `steps` no-op steps; `onStep` counts them. */
function buildRuntime(queue: Queue, store: ObjectStore, steps: number, onStep: () => void): WorkflowRuntime {
  return WorkflowRuntime.builder(
    queue,
    store,
    {
      runStep: async (step) => {
        onStep();
        return step.stepNumber + 1 >= steps ? StepOutcome.succeed(step.payload) : StepOutcome.continueNow(step.payload);
      },
    },
    NoopTerminalHook,
  )
    .queueName(STEPS)
    .maxConcurrentSteps(32)
    .build();
}

/** A worker process: owns its share of the shards and prints its step count every 100 ms and on each claim. */
async function worker(dir: string, latencyMs: number, steps: number, leaseMs: number, renewMs: number, id: string, inboxWindow: number): Promise<void> {
  const store = storeOf(dir, latencyMs);
  let count = 0;
  const workers = await runShardWorkers(store, NAME, {
    processId: id,
    leaseDurationMs: leaseMs,
    renewIntervalMs: renewMs,
    logger: { error: (o, m) => console.error(m, o) },
    onChange: (shard, state) => console.log(`${state} ${shard} ${Date.now()}`),
    start: async ({ storeName, term }) => {
      const guarded = term.guard(store);
      const queue = await Queue.open(guarded, storeName, { flushIntervalMs: 2 });
      const runtime = buildRuntime(queue, guarded, steps, () => count++);
      const handle = runtime.spawn();
      const inbox = serveClients(queue, runtime, { store: guarded, listIntervalMs: 100, maxConcurrentRequests: inboxWindow });
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
  const timer = setInterval(() => console.log(`steps ${count} ${Date.now()}`), 100);
  console.log("ready");
  process.stdin.resume();
  await new Promise<void>((resolve) => process.stdin.on("end", resolve));
  clearInterval(timer);
  await workers.stop();
}

interface Child {
  proc: ChildProcess;
  lines: string[];
}

function startWorker(dir: string, latencyMs: number, steps: number, leaseMs: number, renewMs: number, id: string, inboxWindow = 32): Promise<Child> {
  const proc = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      fileURLToPath(import.meta.url),
      "--worker",
      dir,
      String(latencyMs),
      String(steps),
      String(leaseMs),
      String(renewMs),
      id,
      String(inboxWindow),
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const child: Child = { proc, lines: [] };
  let partial = "";
  return new Promise((resolve, reject) => {
    proc.stdout!.on("data", (d: Buffer) => {
      const parts = (partial + d.toString()).split("\n");
      partial = parts.pop()!;
      child.lines.push(...parts);
      if (parts.includes("ready")) resolve(child);
    });
    proc.on("exit", (code) => reject(new Error(`worker ${id} exited with ${code}`)));
  });
}

async function stopAll(children: Child[]): Promise<void> {
  for (const c of children) {
    if (c.proc.exitCode !== null || c.proc.signalCode !== null) continue;
    c.proc.stdin!.end();
    await new Promise((r) => c.proc.on("exit", r));
  }
}

const lastSteps = (c: Child): { n: number; at: number } => {
  for (let i = c.lines.length - 1; i >= 0; i--) {
    const [w, n, at] = c.lines[i]!.split(" ");
    if (w === "steps") return { n: Number(n), at: Number(at) };
  }
  return { n: 0, at: 0 };
};

/** The shards a worker owns now, by its "owner"/"standby" lines. */
function ownedBy(c: Child): Set<number> {
  const owned = new Set<number>();
  for (const l of c.lines) {
    const [state, shard] = l.split(" ");
    if (state === "owner") owned.add(Number(shard));
    else if (state === "standby" || state === "stopped") owned.delete(Number(shard));
  }
  return owned;
}

async function throughput(shards: number, runs: number, steps: number, inboxWindow: number): Promise<number> {
  return withTempDir("taquba-bench-shards-", async (dir) => {
    await createShards(new LocalStore(dir), NAME, shards);
    const children = await Promise.all(Array.from({ length: shards }, (_, i) => startWorker(dir, 20, steps, 3_000, 500, `p${i}`, inboxWindow)));
    const client = await TaqubaClient.open(storeOf(dir, 20), { name: NAME, queueName: STEPS, pollIntervalMs: 200, timeoutMs: 120_000 });
    try {
      // Wait until the processes have shared the shards out, one each.
      while (!children.every((c) => ownedBy(c).size === 1)) await new Promise((r) => setTimeout(r, 50));
      const before = children.reduce((n, c) => n + lastSteps(c).n, 0);
      const total = runs * steps;
      const input = new TextEncoder().encode("{}");
      const t0 = Date.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < runs) await client.submit({ runId: `run-${next++}`, input });
        }),
      );
      for (;;) {
        const done = children.reduce((n, c) => n + lastSteps(c).n, 0) - before;
        if (done >= total) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const end = Math.max(...children.map((c) => lastSteps(c).at));
      return (total * 1000) / (end - t0);
    } finally {
      await client.close();
      await stopAll(children);
    }
  });
}

async function takeover(leaseMs: number, renewMs: number, kills: number): Promise<number[]> {
  return withTempDir("taquba-bench-takeover-", async (dir) => {
    await createShards(new LocalStore(dir), NAME, 1);
    const times: number[] = [];
    let serial = 0;
    const children: Child[] = [];
    const spawnOne = async () => children.push(await startWorker(dir, 0, 1, leaseMs, renewMs, `t${serial++}`));
    await spawnOne();
    await spawnOne();
    const ownerOf = (since: number) =>
      children.find(
        (c) => c.proc.exitCode === null && c.proc.signalCode === null && c.lines.some((l) => l.startsWith("owner 0 ") && Number(l.split(" ")[2]) >= since),
      );
    try {
      while (ownerOf(0) === undefined) await new Promise((r) => setTimeout(r, 20));
      for (let k = 0; k < kills; k++) {
        const victim = ownerOf(0)!;
        // Kill at a random point of the renewal cycle.
        await new Promise((r) => setTimeout(r, renewMs * (1 + Math.random())));
        const killAt = Date.now();
        victim.proc.kill("SIGKILL");
        await new Promise((r) => victim.proc.on("exit", r));
        let next: Child | undefined;
        while ((next = ownerOf(killAt)) === undefined) await new Promise((r) => setTimeout(r, 10));
        const at = Number(next.lines.find((l) => l.startsWith("owner 0 ") && Number(l.split(" ")[2]) >= killAt)!.split(" ")[2]);
        times.push(at - killAt);
        await spawnOne();
      }
    } finally {
      for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGKILL");
    }
    return times;
  });
}

async function idle(seconds: number): Promise<void> {
  await withTempDir("taquba-bench-idle-", async (dir) => {
    await createShards(new LocalStore(dir), NAME, 4);
    const owner = withCounting(new LocalStore(dir));
    const standby = withCounting(new LocalStore(dir));
    const open = (store: ObjectStore, id: string) =>
      runShardWorkers(store, NAME, {
        processId: id,
        logger: { error: () => undefined },
        start: async ({ storeName, term }) => {
          const guarded = term.guard(store);
          const queue = await Queue.open(guarded, storeName);
          const runtime = buildRuntime(queue, guarded, 1, () => undefined);
          // Polling every second as on S3 (a local directory would be notified instead).
          const inbox = serveClients(queue, runtime, { store: withoutWatch(guarded), listIntervalMs: 1_000 });
          return {
            stop: async () => {
              await inbox.stop();
              await queue.close();
            },
          };
        },
      });
    const a = await open(owner, "a");
    while (a.owned().length < 4) await new Promise((r) => setTimeout(r, 50));
    const b = await open(standby, "b");
    // The two share the shards out (a hands two to b) before the count starts.
    while (a.owned().length !== 2 || b.owned().length !== 2) await new Promise((r) => setTimeout(r, 200));
    await new Promise((r) => setTimeout(r, 3_000));
    const snap = (s: typeof owner) => ({ ...s.counts });
    const a0 = snap(owner);
    const b0 = snap(standby);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const scale = 3600 / seconds;
    const per = (now: typeof a0, then: typeof a0) =>
      `${Math.round((now.puts - then.puts) * scale)} PUT, ${Math.round((now.gets - then.gets) * scale)} GET, ${Math.round((now.lists - then.lists) * scale)} LIST, ${Math.round((now.deletes - then.deletes) * scale)} DELETE`;
    console.log(`idle, 4 shards over 2 processes, default timings, inbox listing every 1 s, per ${seconds} s scaled to an hour:`);
    console.log(`  process a (owns 2, watches 2): ${per(snap(owner), a0)}`);
    console.log(`  process b (owns 2, watches 2): ${per(snap(standby), b0)}`);
    await Promise.all([a.stop(), b.stop()]);
  });
}

/** A store without the local directory's watch hook, so the inbox polls as it would on S3. */
function withoutWatch(store: ObjectStore): ObjectStore {
  return {
    get: (k) => store.get(k),
    put: (k, b, o) => store.put(k, b, o),
    delete: (k) => store.delete(k),
    list: (p, o) => store.list(p, o),
  };
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    worker: { type: "boolean" },
    runs: { type: "string", default: "200" },
    steps: { type: "string", default: "5" },
    lease: { type: "string", default: "3000" },
    renew: { type: "string", default: "500" },
    kills: { type: "string", default: "5" },
    idle: { type: "string", default: "30" },
    inbox: { type: "string", default: "1,32" },
    only: { type: "string" },
  },
});
if (values.worker) {
  const [dir, latency, steps, lease, renew, id, inboxWindow] = positionals as [string, string, string, string, string, string, string];
  await worker(dir, Number(latency), Number(steps), Number(lease), Number(renew), id, Number(inboxWindow));
} else {
  const runs = Number(values.runs);
  const steps = Number(values.steps);
  console.log(`load average before: ${load()}`);
  for (const inboxWindow of values.only === undefined || values.only === "throughput" ? values.inbox.split(",").map(Number) : []) {
    let base = 0;
    for (const s of [1, 2, 4]) {
      const rate = await throughput(s, runs, steps, inboxWindow);
      if (s === 1) base = rate;
      console.log(
        `${s} shard(s), ${s} process(es), 20 ms store, inbox ${inboxWindow} at once: ${rate.toFixed(1)} steps/s (${(rate / base).toFixed(2)}x), load ${load()}`,
      );
    }
  }
  if (values.only === undefined || values.only === "takeover") {
    const times = (await takeover(Number(values.lease), Number(values.renew), Number(values.kills))).sort((a, b) => a - b);
    console.log(
      `takeover after SIGKILL, lease ${values.lease} ms, renewals every ${values.renew} ms, ${times.length} kills: p50 ${percentile(times, 50).toFixed(0)} ms, max ${times[times.length - 1]!.toFixed(0)} ms, load ${load()}`,
    );
  }
  if (values.only === undefined || values.only === "idle") await idle(Number(values.idle));
  console.log(`load average after: ${load()}`);
}
