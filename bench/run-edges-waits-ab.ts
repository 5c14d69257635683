/**
 * @module CPU of a run's edge primitives in two or more compiled checkouts,
 * alternating the checkouts' order round by round in one process: the
 * submit lock taken and released on a free key (`KeyedLock.run`), one
 * waiter of a run's end made, woken and dropped (`RunEvents.next`,
 * `terminated`), and `Engine.flush` with every commit durable, each CALLS
 * times per round; CPU by `process.cpuUsage`, at the end the median ns per
 * call of the rounds after the first two (the JIT warms up in those).
 *
 * Run: `npm run build` in each checkout, then
 * `CALLS=200000 ROUNDS=10 npx tsx bench/run-edges-waits-ab.ts <checkout A> <checkout B>`.
 */
import { median } from "./support/percentile.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";

type RunEventsModule = typeof import("../runtime/workflow/runs/run-events.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 200_000);
const ROUNDS = env("ROUNDS", 10);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: { T: Taquba; E: RunEventsModule }[] = [];
for (const d of dirs) mods.push({ T: await loadCheckout(d), E: await loadCheckout<RunEventsModule>(d, "dist/runtime/workflow/runs/run-events.js") });

/** CPU ns per call of `calls` calls of `one`, awaited one at a time. */
async function nsPerCall(one: (i: number) => Promise<unknown>): Promise<number> {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) await one(i);
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / CALLS;
}

const parts = ["lock (free key)", "waiter (made, woken, dropped)", "flush (all durable)"] as const;
async function measure(m: (typeof mods)[number]): Promise<number[]> {
  const lock = new m.E.KeyedLock();
  const work = async () => 1;
  const lockNs = await nsPerCall((i) => lock.run(`run-${i & 1023}`, work));
  const events = new m.E.RunEvents();
  const waitNs = await nsPerCall((i) => {
    const id = `run-${i & 1023}`;
    const w = events.next(id);
    events.terminated(id);
    w.dispose();
    return w.promise;
  });
  const engine = await m.T.Engine.open(new m.T.MemoryStore());
  await engine.flush();
  const flushNs = await nsPerCall(() => engine.flush());
  await engine.close();
  return [lockNs, waitNs, flushNs];
}

console.log(`CALLS=${CALLS} ROUNDS=${ROUNDS} node ${process.version} load ${loadAverageText()}`);
const per: number[][][] = dirs.map(() => parts.map(() => []));
for (let r = 0; r < ROUNDS; r++) {
  const order = dirs.map((_, i) => i);
  if (r % 2 === 1) order.reverse();
  const line: string[] = [];
  for (const i of order) {
    const ns = await measure(mods[i]!);
    for (const [p, v] of ns.entries()) per[i]![p]!.push(v);
    line.push(`${dirs[i]} ${ns.map((v) => v.toFixed(0)).join(" / ")} ns`);
  }
  console.log(`round ${r}: ${line.join(", ")}`);
}
for (let i = 0; i < dirs.length; i++) {
  console.log(`${dirs[i]}: ${parts.map((p, j) => `${p} ${median(per[i]![j]!.slice(2)).toFixed(0)} ns`).join(", ")}`);
}
console.log(`load at end ${loadAverageText()}`);
