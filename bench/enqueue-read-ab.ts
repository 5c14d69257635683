/**
 * @module CPU of reading and checking what a caller hands `enqueueBatch`,
 * per item, of two or more compiled checkouts, alternating round by round
 * in one process: `readEnqueueItems` (each item's fields read once into a
 * copy) then `checkedEnqueueItem` of each copy (its options read and
 * checked), over batches of `BATCH` items with a priority, attempts, two
 * headers and every fourth a dedup key, built fresh per batch as a caller
 * builds them. Everything the public call does before the engine, without
 * the engine's commit, whose CPU hides this part in
 * bench/enqueue-public-ab.ts. Prints ns per item per round (user + system
 * CPU) with the load, then the median of the rounds after the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `ITEMS=500000 ROUNDS=8 npx tsx bench/enqueue-read-ab.ts <checkout A> <checkout B>`.
 */
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadCheckout } from "./support/step-workload.js";

type Fields = typeof import("../runtime/queue/queue-option-fields.js");
type Checks = typeof import("../runtime/queue/validate-enqueue.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ITEMS = env("ITEMS", 500_000);
const ROUNDS = env("ROUNDS", 8);
const BATCH = env("BATCH", 100);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: { fields: Fields; checks: Checks }[] = [];
for (const d of dirs) {
  mods.push({
    fields: await loadCheckout<Fields>(d, "dist/runtime/queue/queue-option-fields.js"),
    checks: await loadCheckout<Checks>(d, "dist/runtime/queue/validate-enqueue.js"),
  });
}

const payload = new Uint8Array(64).fill(7);
let sink = 0;

function measure({ fields, checks }: (typeof mods)[number]): number {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < ITEMS; i += BATCH) {
    const items = [];
    for (let j = i; j < i + BATCH; j++) {
      const headers = { tenant: "acme", region: "eu" };
      const opts = j % 4 === 0 ? { priority: 100, maxAttempts: 5, headers, dedupKey: `order-${j}` } : { priority: 100, maxAttempts: 5, headers };
      items.push({ queueName: "jobs", payload, opts });
    }
    for (const it of fields.readEnqueueItems(items)) sink += checks.checkedEnqueueItem(it.queueName, it.payload, it.opts).queueName.length;
  }
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / ITEMS;
}

console.log(`enqueueBatch's reading and checking, CPU ns per item; ITEMS=${ITEMS} ROUNDS=${ROUNDS} BATCH=${BATCH}`);
printMedians(dirs, await alternateRounds(dirs, ROUNDS, (i) => measure(mods[i]!)), "ns per item");
if (sink === 0) console.log("");
