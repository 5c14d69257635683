/**
 * @module The engine's memtable operations per workflow step of a compiled
 * checkout, by kind and key family: each `get`, `has`, `set` and `delete`
 * of its layered state (`LayeredState`), counted while the side-by-side
 * workload (as in step-cpu-ab.ts, 10-step runs on a MemoryStore) runs N
 * runs with CONC in flight. Ids, times and counters in keys are folded, so
 * the families show: `get j/<id>` is every read of a job record.
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/step-key-ops.ts <checkout>`.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

type Taquba = typeof import("../runtime/index.js");
type State = typeof import("../runtime/engine/layered-state.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const M = 10;
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const L = (await import(pathToFileURL(resolve(dir, "dist/runtime/engine/layered-state.js")).href)) as State;
const T = (await import(pathToFileURL(resolve(dir, "dist/runtime/index.js")).href)) as Taquba;

const counts = new Map<string, number>();
let on = false;
const family = (k: string) =>
  k
    .replace(/[0-9A-Z]{20,}/g, "<id>")
    .replace(/\d{6,}/g, "<n>")
    .replace(/:\d+$/, ":<n>")
    .replace(/\/\d+$/, "/<n>");
const proto = L.LayeredState.prototype as unknown as Record<string, (this: unknown, key: string, ...rest: unknown[]) => unknown>;
for (const m of ["get", "has", "set", "delete"]) {
  const orig = proto[m]!;
  proto[m] = function (this: unknown, key: string, ...rest: unknown[]) {
    if (on) {
      const f = `${m} ${family(key)}`;
      counts.set(f, (counts.get(f) ?? 0) + 1);
    }
    return orig.call(this, key, ...rest);
  };
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const runner: import("../runtime/index.js").StepRunner = {
  async runStep(step) {
    const [j, m] = dec.decode(step.payload).split("/").map(Number) as [number, number];
    return j + 1 >= m ? T.StepOutcome.succeed(enc.encode(String(m))) : T.StepOutcome.continueNow(enc.encode(`${j + 1}/${m}`));
  },
};
const store = new T.MemoryStore();
const queue = await T.Queue.open(store, "bench");
const runtime = T.WorkflowRuntime.builder(queue, store, runner, T.NoopTerminalHook).maxConcurrentSteps(64).build();
const handle = runtime.spawn();
const one = async () => {
  const { runId } = await runtime.submit({ input: enc.encode(`0/${M}`) });
  await runtime.wait(runId);
  if ((await runtime.outcome(runId))?.status !== "succeeded") throw new Error(`run ${runId} did not succeed`);
};
const drive = async (count: number, c: number) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(c, count) }, async () => {
      while (next++ < count) await one();
    }),
  );
};
await drive(20, 10);
on = true;
await drive(N, CONC);
on = false;
await handle.shutdown();
await queue.close();
const steps = N * M;
let total = 0;
for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) {
  total += v;
  if (v / steps >= 0.01) console.log(`${(v / steps).toFixed(3).padStart(7)} ${k}`);
}
console.log(`${(total / steps).toFixed(2)} memtable operations per step (N=${N}, ${CONC} in flight)`);
