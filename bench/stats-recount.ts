/**
 * @module Benchmark: what one `Queue.recountStats` of a queue costs, the
 * turn it holds the owner's queue (it reads and writes in one turn, so no
 * move lands between).
 *
 * A MemoryStore queue holds `--pending` pending jobs and `--claimed`
 * claimed ones on queue "mail", and `--scheduled` scheduled jobs on each
 * of "mail" and "other" (the scheduled entries are in global due order, so
 * the recount reads every queue's). Then `--rounds` dry runs and one
 * recount that writes; the time of each (a figure the machine's load
 * moves) and the entries it read.
 *
 * Run: npx tsx bench/stats-recount.ts [--pending 50000] [--scheduled 10000] [--claimed 1000] [--rounds 5]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { MemoryStore, Queue } from "../runtime/index.js";
import { fillForRecount } from "./support/recount-fill.js";

const { values } = parseArgs({
  options: {
    pending: { type: "string", default: "50000" },
    scheduled: { type: "string", default: "10000" },
    claimed: { type: "string", default: "1000" },
    rounds: { type: "string", default: "5" },
  },
});
const PENDING = Number(values.pending);
const SCHEDULED = Number(values.scheduled);
const CLAIMED = Number(values.claimed);
const ROUNDS = Number(values.rounds);

const queue = await Queue.open(new MemoryStore(), "bench", { flushIntervalMs: 0 });
await fillForRecount(queue, { pending: PENDING, scheduled: SCHEDULED, claimed: CLAIMED });

const times: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const t = performance.now();
  await queue.recountStats("mail", { dryRun: true });
  times.push(performance.now() - t);
}
const t = performance.now();
const written = await queue.recountStats("mail");
const writeMs = performance.now() - t;
await queue.close();
const sorted = [...times].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    bench: "stats-recount",
    pending: PENDING,
    scheduledPerQueue: SCHEDULED,
    claimed: CLAIMED,
    entriesRead: PENDING + CLAIMED + 2 * SCHEDULED + CLAIMED,
    dryRunMs: { median: Number(sorted[Math.floor(ROUNDS / 2)]!.toFixed(1)), min: Number(sorted[0]!.toFixed(1)), max: Number(sorted.at(-1)!.toFixed(1)) },
    writeMs: Number(writeMs.toFixed(1)),
    recounted: written.recounted,
    changed: written.changed,
    load: loadavg()[0]!.toFixed(1),
    node: process.version,
  }),
);
