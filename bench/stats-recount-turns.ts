/**
 * @module Benchmark: how long `Queue.recountStats` holds the owner, two or
 * more checkouts side by side in one process (rounds alternate their
 * order), so each runs under the same load.
 *
 * Per checkout and round: a MemoryStore queue holds PENDING pending jobs
 * and CLAIMED claimed ones on queue "mail", and SCHEDULED scheduled jobs on
 * each of "mail" and "other" (the recount reads every scheduled entry).
 * During one dry run and one recount (whose record holds the counts
 * already: it writes nothing, and reads as much), a probe chains `setImmediate` callbacks and a mover enqueues,
 * claims and acks jobs of queue "work" on the same owner, one after
 * another. Printed per recount: its wall time, the longest gap between two
 * probe callbacks (the longest turn the owner was held: no job of any
 * queue moves in it), the moves of "work" made during it and the longest
 * one. The figure that decides: `longestTurnMs`, base against new (at
 * load, `longestTurnCpuMs`: the process's CPU time between the two
 * callbacks, which leaves out the time other processes held the core).
 *
 * Run: `CHECKOUTS` are source trees (their `runtime/index.ts` is loaded
 * under tsx): `git archive <base> runtime | tar -x -C bench/.out/base`
 * makes the base's, then
 * `PENDING=50000 SCHEDULED=10000 CLAIMED=1000 ROUNDS=3 npx tsx bench/stats-recount-turns.ts bench/.out/base .`
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { fillForRecount } from "./support/recount-fill.js";

type Taquba = typeof import("../runtime/index.js");
type Queue = import("../runtime/index.js").Queue;

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const PENDING = env("PENDING", 50_000);
const SCHEDULED = env("SCHEDULED", 10_000);
const CLAIMED = env("CLAIMED", 1_000);
const ROUNDS = env("ROUNDS", 3);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more source trees (each with runtime/index.ts)");
const mods: Taquba[] = [];
for (const d of dirs) mods.push((await import(pathToFileURL(resolve(d, "runtime/index.ts")).href)) as Taquba);

const payload = new Uint8Array(16);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function filled(T: Taquba): Promise<Queue> {
  const queue = await T.Queue.open(new T.MemoryStore(), "bench", { flushIntervalMs: 0 });
  await fillForRecount(queue, { pending: PENDING, scheduled: SCHEDULED, claimed: CLAIMED });
  return queue;
}

interface Held {
  recountMs: number;
  longestTurnMs: number;
  longestTurnCpuMs: number;
  moves: number;
  longestMoveMs: number;
  changed: boolean;
}

/** `recount()` with the probe and the mover running beside it. */
async function held(queue: Queue, recount: () => Promise<{ changed: boolean }>): Promise<Held> {
  let running = true;
  let longestTurn = 0;
  let longestCpu = 0;
  let last = performance.now();
  let lastCpu = cpuMs();
  const probe = () => {
    const t = performance.now();
    const c = cpuMs();
    if (t - last > longestTurn) longestTurn = t - last;
    // The CPU the process spent between two callbacks: what the turn cost, without the time the load took the core away.
    if (c - lastCpu > longestCpu) longestCpu = c - lastCpu;
    last = t;
    lastCpu = c;
    if (running) setImmediate(probe);
  };
  let moves = 0;
  let longestMove = 0;
  const mover = (async () => {
    while (running) {
      const t = performance.now();
      await queue.enqueue("work", payload);
      const job = await queue.claim("work");
      if (job !== null) await queue.ack(job);
      const d = performance.now() - t;
      if (running) {
        moves++;
        if (d > longestMove) longestMove = d;
      }
    }
  })();
  // Both started and settled before the recount begins.
  await new Promise((r) => setTimeout(r, 20));
  longestTurn = 0;
  longestCpu = 0;
  moves = 0;
  longestMove = 0;
  last = performance.now();
  lastCpu = cpuMs();
  setImmediate(probe);
  const t0 = performance.now();
  const answer = await recount();
  const recountMs = performance.now() - t0;
  // One more probe after it: a recount that held the owner to its end shows as the gap before this one.
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  running = false;
  await mover;
  return { recountMs, longestTurnMs: longestTurn, longestTurnCpuMs: longestCpu, moves, longestMoveMs: longestMove, changed: answer.changed };
}

const r1 = (x: number) => Number(x.toFixed(1));
const results: Record<string, { dry: Held[]; write: Held[] }> = {};
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? mods.map((_, i) => i) : mods.map((_, i) => mods.length - 1 - i);
  for (const i of order) {
    const T = mods[i]!;
    const queue = await filled(T);
    const dry = await held(queue, () => queue.recountStats("mail", { dryRun: true }));
    // A recount that would write (its record holds the counts already, so the commit is skipped: the read is the cost).
    const write = await held(queue, () => queue.recountStats("mail"));
    await queue.close();
    const r = (results[dirs[i]!] ??= { dry: [], write: [] });
    r.dry.push(dry);
    r.write.push(write);
    console.log(
      JSON.stringify({
        round,
        tree: dirs[i],
        dry: {
          recountMs: r1(dry.recountMs),
          longestTurnMs: r1(dry.longestTurnMs),
          longestTurnCpuMs: r1(dry.longestTurnCpuMs),
          moves: dry.moves,
          longestMoveMs: r1(dry.longestMoveMs),
        },
        write: {
          recountMs: r1(write.recountMs),
          longestTurnMs: r1(write.longestTurnMs),
          longestTurnCpuMs: r1(write.longestTurnCpuMs),
          moves: write.moves,
          longestMoveMs: r1(write.longestMoveMs),
        },
        load: loadAverageText(),
      }),
    );
  }
}
const med = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return r1(s[Math.floor(s.length / 2)]!);
};
for (const d of dirs) {
  const { dry } = results[d]!;
  console.log(
    JSON.stringify({
      bench: "stats-recount-turns",
      tree: d,
      pending: PENDING,
      scheduledPerQueue: SCHEDULED,
      claimed: CLAIMED,
      rounds: ROUNDS,
      dryRun: {
        recountMs: med(dry.map((h) => h.recountMs)),
        longestTurnMs: med(dry.map((h) => h.longestTurnMs)),
        longestTurnCpuMs: med(dry.map((h) => h.longestTurnCpuMs)),
        movesDuring: med(dry.map((h) => h.moves)),
        longestMoveMs: med(dry.map((h) => h.longestMoveMs)),
      },
      load: loadAverageText(),
      node: process.version,
    }),
  );
}
