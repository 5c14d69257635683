/**
 * @module Where a step transition's time goes over a slow store: the
 * workload of `step-transitions.ts` (N runs of M `continueNow` steps, all
 * in flight) over `withLatency`, with every WAL put traced.
 *
 * Each WAL put is recorded when the engine issues it and when it lands,
 * with the batches its object carries (submits, settlements, claims);
 * an object is durable once it and every earlier one have landed. Every
 * transition (step k−1 to step k of one run handed to the runner) is then
 * split by the WAL object that carried step k−1's settlement:
 * - cpu+seal: from step k−1 handed out to that object's put issued, split
 *   into cpu (handed out to the settlement appended to the WAL) and gather
 *   (appended to sealed, the group commit's wait) and seal to put issued;
 * - put: the put's own round trip;
 * - order: from landing to durable (waiting for an earlier object);
 * - release: from durable to step k handed out (release groups ahead of it,
 *   the continuations' CPU).
 * Also: the share of the time with no WAL put in flight, the most in flight
 * at once, batches per object, claims, CPU time, and the puts around the
 * middle of the run as a timeline.
 *
 * Env: N_RUNS (100), N_STEPS (10), MAX_CONCURRENT_STEPS (100),
 * SUBMIT_CONCURRENCY (32), LATENCY_MS (20), JITTER_MS (5), FLUSH_MS (2),
 * REPEAT (3), TIMELINE (1: print the puts of the median run around its
 * middle), OTHER (1: print every other store request with its start and end).
 */
import { loadavg } from "node:os";
import { decodeWal } from "../runtime/engine/wal-format.js";
import { WalWriter } from "../runtime/engine/wal-writer.js";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, withLatency, type ObjectStore, type StepRunner } from "../runtime/index.js";
import type { PutOptions } from "../runtime/store/object-store.js";
import { percentile } from "./support/percentile.js";

const N_RUNS = Number(process.env.N_RUNS ?? 100);
const N_STEPS = Number(process.env.N_STEPS ?? 10);
const MAX_CONCURRENT_STEPS = Number(process.env.MAX_CONCURRENT_STEPS ?? 100);
const SUBMIT_CONCURRENCY = Number(process.env.SUBMIT_CONCURRENCY ?? 32);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 20);
const JITTER_MS = Number(process.env.JITTER_MS ?? 5);
const FLUSH_MS = Number(process.env.FLUSH_MS ?? 2);
const REPEAT = Number(process.env.REPEAT ?? 3);
const TIMELINE = process.env.TIMELINE !== "0";

interface Put {
  seq: number;
  issued: number;
  landed: number;
  durable: number;
  submits: number;
  settles: number;
  claims: number;
  /** Jobs claimed by the claims (a claim batch takes many). */
  claimed: number;
  other: number;
}

const HISTORY = /^u\/workflow\/history\/[^/]+\/(.+)\/(\d+)$/;

/** A store that records each WAL put (issue, landing, what its object carries); other calls pass through. */
function tracing(inner: ObjectStore, puts: Put[], settledIn: Map<string, number>, t0: () => number): ObjectStore {
  const other = async <T>(what: string, key: string, f: () => Promise<T>): Promise<T> => {
    const at = performance.now() - t0();
    const res = await f();
    if (process.env.OTHER === "1") console.log(`${what} ${key} ${at.toFixed(1)} -> ${(performance.now() - t0()).toFixed(1)}`);
    return res;
  };
  return {
    get: (k) => other("get", k, () => inner.get(k)),
    ...(inner.getRange === undefined ? {} : { getRange: (k: string, o: number, l: number) => other("getRange", k, () => inner.getRange!(k, o, l)) }),
    delete: (k) => other("delete", k, () => inner.delete(k)),
    list: (p, o) => inner.list(p, o),
    async put(key: string, body: Uint8Array, opts?: PutOptions) {
      const m = /\/wal\/(\d+)$/.exec(key);
      if (m === null) return other("put", key, () => inner.put(key, body, opts));
      const seq = Number(m[1]);
      const p: Put = { seq, issued: performance.now() - t0(), landed: NaN, durable: NaN, submits: 0, settles: 0, claims: 0, claimed: 0, other: 0 };
      const w = decodeWal(key, body, seq);
      if (w.kind === "batches") {
        for (const b of w.batches) {
          let kind: "submits" | "settles" | "claims" | "other" = "other";
          for (const op of b) {
            const h = HISTORY.exec(op.key);
            if (h !== null && op.kind === "put") {
              kind = "settles";
              settledIn.set(`${h[1]}/${Number(h[2])}`, seq);
              break;
            }
            if (op.key.startsWith("u/workflow/runs/") && op.kind === "put") kind = "submits";
            else if (op.key.startsWith("c/") && op.kind === "put" && kind === "other") kind = "claims";
          }
          p[kind]++;
          if (kind === "claims") for (const op of b) if (op.kind === "put" && op.key.startsWith("c/")) p.claimed++;
        }
      }
      puts.push(p);
      const res = await inner.put(key, body, opts);
      p.landed = performance.now() - t0();
      return res;
    },
  };
}

/** When each settlement ("run/step") was appended to the WAL, and when each object was sealed (by sequence number). */
const appendedAt = new Map<string, number>();
const sealedAt = new Map<number, number>();
let traceStart = 0;
const append = WalWriter.prototype.append;
WalWriter.prototype.append = function (this: WalWriter, ops, room, keys) {
  for (const op of ops) {
    const h = op.kind === "put" ? HISTORY.exec(op.key) : null;
    if (h !== null) appendedAt.set(`${h[1]}/${Number(h[2])}`, performance.now() - traceStart);
  }
  append.call(this, ops, room, keys);
};
const seal = WalWriter.prototype.seal;
WalWriter.prototype.seal = function (this: WalWriter) {
  const before = this.lastSeq;
  const at = performance.now() - traceStart;
  const seq = seal.call(this);
  if (seq !== before) sealedAt.set(seq, at);
  return seq;
};

interface Trace {
  stepsPerSec: number;
  lines: string[];
}

async function once(): Promise<Trace> {
  const puts: Put[] = [];
  const settledIn = new Map<string, number>();
  let start = 0;
  const store = tracing(withLatency(new MemoryStore(), { ms: LATENCY_MS, jitterMs: JITTER_MS }), puts, settledIn, () => start);
  const queue = await Queue.open(store, "bench", { flushIntervalMs: FLUSH_MS });
  const seen = new Map<string, number[]>();
  const runner: StepRunner = {
    async runStep(s) {
      let t = seen.get(s.runId);
      if (t === undefined) seen.set(s.runId, (t = []));
      t[s.stepNumber] = performance.now() - start;
      return s.stepNumber + 1 < N_STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
    },
  };
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook)
    .logger({ error: (o) => console.error(o) })
    .maxConcurrentSteps(MAX_CONCURRENT_STEPS)
    .build();
  const worker = runtime.spawn();
  const payload = new Uint8Array(64).fill(7);
  const ids = Array.from({ length: N_RUNS }, (_, i) => `run-${i}`);
  const firstPut = puts.length;
  start = traceStart = performance.now();
  appendedAt.clear();
  sealedAt.clear();
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  let next = 0;
  const waits: Promise<unknown>[] = [];
  await Promise.all(
    Array.from({ length: Math.min(SUBMIT_CONCURRENCY, N_RUNS) }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        await runtime.submit({ input: payload, runId: id });
        waits.push(runtime.wait(id));
      }
    }),
  );
  await Promise.all(waits);
  const elapsed = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  await worker.shutdown();
  await queue.close();

  const ps = puts.slice(firstPut).sort((a, b) => a.seq - b.seq);
  let d = -Infinity;
  for (const p of ps) p.durable = d = Math.max(d, p.landed);
  const bySeq = new Map(ps.map((p) => [p.seq, p]));
  // Transitions split by the WAL object of the settlement between them.
  const parts = {
    total: [] as number[],
    cpuSeal: [] as number[],
    cpu: [] as number[],
    gather: [] as number[],
    toPut: [] as number[],
    put: [] as number[],
    order: [] as number[],
    release: [] as number[],
  };
  const byK: { total: number[]; cpuSeal: number[]; release: number[] }[] = Array.from({ length: N_STEPS }, () => ({ total: [], cpuSeal: [], release: [] }));
  for (const [run, t] of seen) {
    for (let k = 1; k < t.length; k++) {
      const p = bySeq.get(settledIn.get(`${run}/${k - 1}`) ?? -1);
      if (p === undefined) continue;
      byK[k]!.total.push(t[k]! - t[k - 1]!);
      byK[k]!.cpuSeal.push(p.issued - t[k - 1]!);
      byK[k]!.release.push(t[k]! - p.durable);
      parts.total.push(t[k]! - t[k - 1]!);
      parts.cpuSeal.push(p.issued - t[k - 1]!);
      const appended = appendedAt.get(`${run}/${k - 1}`);
      const sealed = sealedAt.get(p.seq);
      if (appended !== undefined && sealed !== undefined) {
        parts.cpu.push(appended - t[k - 1]!);
        parts.gather.push(sealed - appended);
        parts.toPut.push(p.issued - sealed);
      }
      parts.put.push(p.landed - p.issued);
      parts.order.push(p.durable - p.landed);
      parts.release.push(t[k]! - p.durable);
    }
  }
  // Time with no WAL put in flight, from the first put to the last landing.
  const events = ps.flatMap((p) => [
    [p.issued, 1],
    [p.landed, -1],
  ]) as [number, number][];
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let inFlight = 0;
  let most = 0;
  let idle = 0;
  let idleFrom = 0;
  let gaps = 0;
  const gapList: string[] = [];
  for (const [t, dlt] of events) {
    if (inFlight === 0 && dlt > 0 && t > idleFrom) {
      idle += t - idleFrom;
      gaps++;
      if (t - idleFrom >= 0.5) gapList.push(`${idleFrom.toFixed(0)}+${(t - idleFrom).toFixed(1)}`);
    }
    inFlight += dlt;
    most = Math.max(most, inFlight);
    if (inFlight === 0) idleFrom = t;
  }
  const lastEnd = events.length > 0 ? events[events.length - 1]![0] : 0;
  const steps = N_RUNS * N_STEPS;
  const stat = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
    return `${mean.toFixed(1)} / ${percentile(s, 50).toFixed(1)} / ${percentile(s, 90).toFixed(1)}`;
  };
  const sum = (f: (p: Put) => number) => ps.reduce((a, p) => a + f(p), 0);
  const perObj = ps.map((p) => p.submits + p.settles + p.claims + p.other).sort((a, b) => a - b);
  const lines = [
    `steps/s ${Math.round(steps / (elapsed / 1000))}, elapsed ${elapsed.toFixed(1)} ms, CPU ${Math.round((cpu.user + cpu.system) / steps)} µs/step, load ${loadavg()[0]!.toFixed(2)}`,
    `WAL puts ${ps.length} (${(ps.length / steps).toFixed(3)}/step); batches: submits ${sum((p) => p.submits)}, settlements ${sum((p) => p.settles)}, claims ${sum((p) => p.claims)} (of ${sum((p) => p.claimed)} jobs), other ${sum((p) => p.other)}; per object p10/p50/p90/max ${percentile(perObj, 10)}/${percentile(perObj, 50)}/${percentile(perObj, 90)}/${perObj[perObj.length - 1]}`,
    `no put in flight: ${idle.toFixed(1)} ms in ${gaps} gaps over ${lastEnd.toFixed(1)} ms; most in flight ${most} (gaps of 0.5 ms or more at ms+length: ${gapList.join(", ")}); event-loop utilization ${(elu.utilization * 100).toFixed(0)}%; last landing to end ${(elapsed - lastEnd).toFixed(1)} ms`,
    `transition (mean / p50 / p90 ms): total ${stat(parts.total)} | cpu+seal ${stat(parts.cpuSeal)} (cpu ${stat(parts.cpu)}, gather ${stat(parts.gather)}, seal to put ${stat(parts.toPut)}) | put ${stat(parts.put)} | order ${stat(parts.order)} | release ${stat(parts.release)}`,
    `by step (mean total, cpu+seal, release): ${byK
      .slice(1)
      .map((b, i) => {
        const m = (xs: number[]) => (xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length)).toFixed(1);
        return `${i + 1}: ${m(b.total)} ${m(b.cpuSeal)} ${m(b.release)}`;
      })
      .join(" | ")}`,
    `first step handed out: ${stat([...seen.values()].map((t) => t[0]!))}; last step handed out p50/max ${(() => {
      const l = [...seen.values()].map((t) => t[t.length - 1]!).sort((a, b) => a - b);
      return `${percentile(l, 50).toFixed(1)} / ${l[l.length - 1]!.toFixed(1)}`;
    })()}`,
  ];
  if (TIMELINE) {
    // The puts issued in a 60 ms window around the middle: issue, landing, durable, batches.
    const mid = elapsed / 2;
    lines.push("| seq | issued | landed | durable | submits | settlements | claims | other |", "|---|---|---|---|---|---|---|---|");
    for (const p of ps) {
      if (p.issued < mid - 30 || p.issued > mid + 30) continue;
      lines.push(
        `| ${p.seq} | ${p.issued.toFixed(1)} | ${p.landed.toFixed(1)} | ${p.durable.toFixed(1)} | ${p.submits} | ${p.settles} | ${p.claims} | ${p.other} |`,
      );
    }
  }
  return { stepsPerSec: steps / (elapsed / 1000), lines };
}

console.log(
  `latency-wave-trace: N_RUNS=${N_RUNS} N_STEPS=${N_STEPS} MAX_CONCURRENT_STEPS=${MAX_CONCURRENT_STEPS} SUBMIT_CONCURRENCY=${SUBMIT_CONCURRENCY} LATENCY=${LATENCY_MS}±${JITTER_MS} ms FLUSH_MS=${FLUSH_MS}`,
);
// Warm-up (not reported): the first runs of a process pay for JIT compilation.
await once();
const traces: Trace[] = [];
for (let i = 0; i < REPEAT; i++) traces.push(await once());
const order = [...traces].sort((a, b) => a.stepsPerSec - b.stepsPerSec);
for (const t of traces) console.log(`${t.lines.slice(0, 6).join("\n")}\n`);
if (TIMELINE) console.log(`timeline of the median run:\n${order[Math.floor(order.length / 2)]!.lines.slice(6).join("\n")}`);
