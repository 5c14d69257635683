/**
 * @module How long a backfill's check of its range holds the owner's event
 * loop: a backfill of a sparse expression (CRON, default `0 0 29 2 1`,
 * croner's OR of the day fields: about four ticks a year) over a range of
 * more than 10,000 ticks, refused after the check, through
 * `runtime.schedules.backfill` on a MemoryStore; beside it, the same
 * listing in one go as the check did it before (`sync`). For each, the
 * wall time, the longest time between two turns of the loop (a loop of
 * `setImmediate` beside it; stretched by the machine's load) and the most
 * calls into croner between two turns (the figure that does not depend on
 * load). ROUNDS rounds (default 2), both orders.
 */
import { loadavg } from "node:os";
import { setImmediate as nextTurn } from "node:timers/promises";
import { Cron } from "croner";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, WorkflowRuntime } from "../runtime/index.js";
import { cronTimes } from "../runtime/workflow/schedules/cron-times.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "../test/client/fixtures/app.js";

const CRON = process.env.CRON ?? "0 0 29 2 1";
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const FROM = Date.UTC(1970, 0, 1);
const TO = Date.UTC(4500, 0, 1);

// Every call into croner, counted (its `nextRun` is what each tick costs).
let calls = 0;
const nextRun = Cron.prototype.nextRun;
Cron.prototype.nextRun = function (this: Cron, ...a: Parameters<Cron["nextRun"]>) {
  calls++;
  return nextRun.apply(this, a);
};

/** The check as it was before: every tick of the range (up to one past 10,000) listed in one go. */
async function syncCheck(): Promise<void> {
  const times = cronTimes("bench", CRON, "UTC");
  let n = 0;
  for (let t = times.next(FROM - 1); t !== null && t <= TO && n <= 10_000; t = times.next(t)) n++;
}

async function main(): Promise<void> {
  console.log(
    `backfill-loop-held: CRON="${CRON}" range ${new Date(FROM).toISOString()}..${new Date(TO).toISOString()}, ROUNDS=${ROUNDS}, load ${loadavg()[0]!.toFixed(1)}, node ${process.version}`,
  );
  const store = new MemoryStore();
  const queue = await Queue.open(store, STORE_NAME, { clock: new MockClock(Date.UTC(2026, 0, 5)), flushIntervalMs: 0 });
  try {
    const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
    await runtime.schedules.upsert({ id: "s", cron: CRON, run: { input: new TextEncoder().encode("{}") } });
    const ways: Record<string, () => Promise<unknown>> = {
      sync: syncCheck,
      yielding: () => runtime.schedules.backfill("s", FROM, TO).catch((e: unknown) => e),
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const way of round % 2 === 0 ? ["sync", "yielding"] : ["yielding", "sync"]) {
        let done = false;
        let longest = 0;
        let last = calls;
        let longestMs = 0;
        let lastAt = performance.now();
        const note = () => {
          const at = performance.now();
          longest = Math.max(longest, calls - last);
          longestMs = Math.max(longestMs, at - lastAt);
          last = calls;
          lastAt = at;
        };
        const watcher = (async () => {
          while (!done) {
            note();
            await nextTurn();
          }
        })();
        const before = calls;
        const started = performance.now();
        await ways[way]!();
        const wall = performance.now() - started;
        note();
        done = true;
        await watcher;
        console.log(
          `${way.padEnd(8)} round ${round}: wall ${wall.toFixed(0)} ms, longest between two turns ${longestMs.toFixed(1)} ms, croner calls ${calls - before}, most between two turns ${longest}`,
        );
      }
    }
  } finally {
    await queue.close();
  }
}

await main();
