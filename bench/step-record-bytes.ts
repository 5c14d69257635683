/**
 * @module What each byte a workflow step puts is: the WAL objects of RUNS
 * runs of M steps (the peers' workload's runner, one run at a time on a
 * MemoryStore, no checkpoint) decoded, their ops' value bytes summed by key
 * family, and each job record (`j/<id>`) and history entry split by field
 * (a field's name and its value, MessagePack headers included). Keys are
 * counted as written whole; the WAL shares their first bytes (see
 * docs/engine.md), so the figures are a step's records, not its stored bytes.
 *
 * Run: `RUNS=20 M=10 npx tsx bench/step-record-bytes.ts` (SAMPLE=1 prints one
 * job record of each state as decoded).
 */
import { loadavg } from "node:os";
import { decodeWal } from "../runtime/engine/wal-format.js";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type ObjectStore } from "../runtime/index.js";
import type { PutOptions } from "../runtime/store/object-store.js";
import { unpack } from "msgpackr";
import { chainRunner } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const RUNS = env("RUNS", 20);
const M = env("M", 10);

const enc = new TextEncoder();
const runner = chainRunner({ StepOutcome });

interface Op {
  kind: "put" | "delete";
  key: string;
  value?: Uint8Array;
}
const ops: Op[] = [];
let on = false;
let walBytes = 0;

function capturing(inner: ObjectStore): ObjectStore {
  return {
    get: (k) => inner.get(k),
    delete: (k) => inner.delete(k),
    list: (p, o) => inner.list(p, o),
    async put(key: string, body: Uint8Array, opts?: PutOptions) {
      const m = /\/wal\/(\d+)$/.exec(key);
      if (m !== null && on) {
        walBytes += body.length;
        const w = decodeWal(key, body, Number(m[1]));
        if (w.kind === "batches")
          for (const b of w.batches)
            for (const op of b) ops.push(op.kind === "put" ? { kind: "put", key: op.key, value: op.value } : { kind: "delete", key: op.key });
      }
      return inner.put(key, body, opts);
    },
  };
}

/** The key's family: ids, counters and times folded. */
const family = (k: string) =>
  k
    .replace(/[0-9A-Za-z_-]{20,}/g, "<id>")
    .replace(/\d{6,}/g, "<n>")
    .replace(/:\d+$/, ":<n>")
    .replace(/\/\d+$/, "/<n>");

/** Bytes from `at` to the end of the MessagePack value there. */
function skip(b: Uint8Array, at: number): number {
  const t = b[at]!;
  const u = (n: number) => {
    let v = 0;
    for (let i = 1; i <= n; i++) v = v * 256 + b[at + i]!;
    return v;
  };
  if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) return at + 1;
  if (t >= 0xa0 && t <= 0xbf) return at + 1 + (t & 0x1f);
  if (t >= 0x80 && t <= 0x8f) return skipN(b, at + 1, 2 * (t & 0x0f));
  if (t >= 0x90 && t <= 0x9f) return skipN(b, at + 1, t & 0x0f);
  switch (t) {
    case 0xcc:
    case 0xd0:
      return at + 2;
    case 0xcd:
    case 0xd1:
      return at + 3;
    case 0xce:
    case 0xd2:
    case 0xca:
      return at + 5;
    case 0xcf:
    case 0xd3:
    case 0xcb:
      return at + 9;
    case 0xd9:
    case 0xc4:
      return at + 2 + u(1);
    case 0xda:
    case 0xc5:
      return at + 3 + u(2);
    case 0xdb:
    case 0xc6:
      return at + 5 + u(4);
    case 0xdc:
      return skipN(b, at + 3, u(2));
    case 0xde:
      return skipN(b, at + 3, 2 * u(2));
  }
  throw new Error(`tag ${t.toString(16)} not read here`);
}
function skipN(b: Uint8Array, at: number, n: number): number {
  let p = at;
  for (let i = 0; i < n; i++) p = skip(b, p);
  return p;
}

/** Bytes of each top-level field of the map `b` (name and value), and of its header under "(map header)". */
function fieldBytes(b: Uint8Array, into: Map<string, number>): void {
  const t = b[0]!;
  let n: number;
  let p: number;
  if (t >= 0x80 && t <= 0x8f) {
    n = t & 0x0f;
    p = 1;
  } else if (t === 0xde) {
    n = (b[1]! << 8) | b[2]!;
    p = 3;
  } else {
    into.set("(not a map)", (into.get("(not a map)") ?? 0) + b.length);
    return;
  }
  into.set("(map header)", (into.get("(map header)") ?? 0) + p);
  for (let i = 0; i < n; i++) {
    const k0 = p;
    const k1 = skip(b, k0);
    const name = unpack(b.subarray(k0, k1)) as string;
    p = skip(b, k1);
    into.set(name, (into.get(name) ?? 0) + (p - k0));
  }
}

const store = capturing(new MemoryStore());
const queue = await Queue.open(store, "bench");
const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).maxConcurrentSteps(64).build();
const handle = runtime.spawn();
const one = async () => {
  const { runId } = await runtime.submit({ input: enc.encode(`0/${M}`) });
  await runtime.wait(runId);
};
for (let i = 0; i < 5; i++) await one();
await queue.flush?.();
on = true;
for (let i = 0; i < RUNS; i++) await one();
await new Promise((r) => setTimeout(r, 50));
on = false;
await handle.shutdown();
await queue.close();

const steps = RUNS * M;
const byFamily = new Map<string, { n: number; key: number; value: number }>();
const jobFields = new Map<string, number>();
const historyFields = new Map<string, number>();
let jobRecords = 0;
let historyEntries = 0;
const samples = new Map<string, unknown>();
for (const op of ops) {
  const f = `${op.kind} ${family(op.key)}`;
  const e = byFamily.get(f) ?? { n: 0, key: 0, value: 0 };
  e.n++;
  e.key += Buffer.byteLength(op.key);
  e.value += op.value?.length ?? 0;
  byFamily.set(f, e);
  if (op.kind === "put" && op.key.startsWith("q/bench/") === false && /(^|\/)j\/[^/]+$/.test(op.key)) {
    jobRecords++;
    fieldBytes(op.value!, jobFields);
    const r = unpack(op.value!) as { state?: string };
    if (!samples.has(`job ${r.state}`)) samples.set(`job ${r.state}`, r);
  } else if (op.kind === "put" && /history\//.test(op.key)) {
    historyEntries++;
    const v = op.value!;
    const head = v[0]!;
    if ((head >= 0x80 && head <= 0x8f) || head === 0xde) fieldBytes(v, historyFields);
    else historyFields.set("(whole)", (historyFields.get("(whole)") ?? 0) + v.length);
    if (!samples.has("history")) samples.set("history", unpack(v));
  }
}

const f1 = (x: number) => x.toFixed(1);
console.log(
  `RUNS=${RUNS} M=${M} (${steps} steps, one run at a time, MemoryStore), load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
console.log(`WAL bytes put per step: ${f1(walBytes / steps)}`);
console.log("\n| op and key family | per step | key bytes/step | value bytes/step |\n|---|---|---|---|");
let keyTotal = 0;
let valueTotal = 0;
for (const [f, e] of [...byFamily].sort((a, b) => b[1].value + b[1].key - (a[1].value + a[1].key))) {
  keyTotal += e.key;
  valueTotal += e.value;
  console.log(`| ${f} | ${(e.n / steps).toFixed(3)} | ${f1(e.key / steps)} | ${f1(e.value / steps)} |`);
}
console.log(`| all | | ${f1(keyTotal / steps)} | ${f1(valueTotal / steps)} |`);
const table = (title: string, m: Map<string, number>, records: number) => {
  const total = [...m.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${title}: ${records} records, ${f1(records / steps)} per step, ${f1(total / records)} bytes each, ${f1(total / steps)} per step`);
  console.log("| field | bytes per record | bytes per step |\n|---|---|---|");
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1])) console.log(`| ${k} | ${f1(v / records)} | ${f1(v / steps)} |`);
};
table("Job records (j/<id> puts)", jobFields, jobRecords);
table("History entries", historyFields, historyEntries);
if (process.env.SAMPLE === "1") for (const [k, v] of samples) console.log(`\n${k}:`, v);
