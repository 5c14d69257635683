/**
 * @module CPU per `Queue.nextJobId()` call of two or more compiled
 * checkouts, round by round in one process (the same load for each). Each
 * checkout's queue holds JOBS pending jobs over a MemoryStore, closed and
 * reopened (their keys in the engine's runs) and then JOBS / 10 more in the
 * memtable, so a check of an id against the jobs held looks in both. A round
 * times CALLS calls per checkout (`process.cpuUsage`, user + system);
 * reported per round, then the median of the rounds after the first two.
 * With FAR_FUTURE=1 one more job holds a caller's ULID of the greatest
 * time a ULID holds, above every id drawn.
 *
 * Run: `npm run build` in each checkout, then
 * `JOBS=100000 CALLS=200000 ROUNDS=10 npx tsx bench/next-job-id-ab.ts <checkout A> <checkout B>`.
 */
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

type AnyQueue = import("../runtime/index.js").Queue;

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const JOBS = env("JOBS", 100_000);
const CALLS = env("CALLS", 200_000);
const ROUNDS = env("ROUNDS", 10);
const FAR_FUTURE = env("FAR_FUTURE", 0) === 1;

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");

async function openFilled(T: Taquba): Promise<AnyQueue> {
  const store = new T.MemoryStore();
  const payload = new Uint8Array(16);
  const fill = async (queue: AnyQueue, n: number) => {
    for (let i = 0; i < n; i += 1000) {
      await queue.enqueueBatch(Array.from({ length: Math.min(1000, n - i) }, () => ({ queueName: "q", payload })));
    }
  };
  const first = await T.Queue.open(store, "ids", { flushIntervalMs: 1 });
  await fill(first, JOBS);
  // A close checkpoints: the reopened queue holds these keys in runs.
  await first.close();
  const queue = await T.Queue.open(store, "ids", { flushIntervalMs: 1 });
  await fill(queue, Math.floor(JOBS / 10));
  if (FAR_FUTURE) await queue.enqueue("q", payload, { jobId: "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" });
  return queue;
}

const queues: AnyQueue[] = [];
for (const d of dirs) queues.push(await openFilled(await loadCheckout(d)));

let sink = 0;
function measure(queue: AnyQueue): number {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) sink += queue.nextJobId().length;
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / CALLS;
}

console.log(
  `nextJobId CPU ns per call; JOBS=${JOBS} (+${Math.floor(JOBS / 10)} in the memtable) CALLS=${CALLS} ROUNDS=${ROUNDS} FAR_FUTURE=${FAR_FUTURE ? 1 : 0}`,
);
for (const [i, d] of dirs.entries()) console.log(`${d}: key runs ${queues[i]!.engineStats.keyRuns}, pending ${(await queues[i]!.view().stats("q")).pending}`);
printMedians(dirs, await alternateRounds(dirs, ROUNDS, (i) => measure(queues[i]!)), "ns per call");
for (const q of queues) await q.close();
if (sink === 0) console.log("");
