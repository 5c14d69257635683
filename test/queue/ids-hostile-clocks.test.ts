/**
 * @module Job ids under hostile clocks: at time 0, at and past the latest
 * time a ULID holds (2^48 - 1 ms; clocks may read up to year 275760, a
 * clock in microseconds does), gone back or forward by days between
 * restarts, and across processes killed with SIGKILL right after their
 * enqueues: ids stay unique and increasing, and claims come in their order.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, Queue, type Clock } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc } from "./helpers.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/enqueue-and-hang.ts", import.meta.url));
const tempDir = useTempDirs("taquba-ids-");
const DAY = 86_400_000;
const ULID_TIME_MAX = 2 ** 48 - 1;

/** Jobs in the order claims hand them out, acked as they come. */
async function drain(queue: Queue): Promise<string[]> {
  const got: string[] = [];
  for (let j = await queue.claim("work"); j; j = await queue.claim("work")) {
    got.push(dec(j.payload));
    await queue.ack(j);
  }
  return got;
}

describe("job ids under hostile clocks", () => {
  it.each([
    ["time 0", [0, 0, 0]],
    ["the latest time a ULID holds", [ULID_TIME_MAX, ULID_TIME_MAX - 2000, ULID_TIME_MAX]],
    ["past the latest time a ULID holds (a clock in microseconds)", [1_700_000_000_000_000, ULID_TIME_MAX + 1, 8.64e15, 1_700_000_000_000]],
    ["gone back and forward by days", [1_700_000_000_000, 1_700_000_000_000 - 5 * DAY, 1_700_000_000_000 + 5 * DAY, 1_700_000_000_000]],
  ] as const)("%s: ids stay unique and increasing over reopens without a close, and claims come in their order", async (_name, times) => {
    const store = new MemoryStore();
    const ids: string[] = [];
    const sent: string[] = [];
    let last: Queue | undefined;
    for (const [life, t] of times.entries()) {
      const clock: Clock = { now: () => t };
      // No close of the one before: this open fences it, as after a crash.
      const queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
      for (let i = 0; i < 5; i++) {
        sent.push(`${life}-${i}`);
        ids.push((await queue.enqueue("work", enc(`${life}-${i}`))).jobId);
      }
      last = queue;
    }
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(await drain(last!)).toEqual(sent);
    await last!.close();
  });

  // Each child loads the package through tsx (about 3 s of CPU): the limit guards against a hang and is stretched by the load.
  it(
    "processes killed with SIGKILL right after their enqueues, each with its clock days or seconds off: every acknowledged id is above all before it and claims come in their order",
    {
      timeout: loadLimitTimeout(120_000),
    },
    () =>
      withinLoadLimit(120_000, async () => {
        const dir = await tempDir();
        const ids: string[] = [];
        const sent: string[] = [];
        for (const [life, offset] of [0, -3 * DAY, 3 * DAY, -5000, 0].entries()) {
          const child = startScript(FIXTURE, [dir, String(offset), "4", `life${life}`], { env: { ...process.env, NODE_OPTIONS: "" } });
          // Killed as soon as it reported its second id: later enqueues may be under way, never acknowledged.
          await child.waitFor((lines) => lines.length >= 2);
          await child.kill();
          expect(backgroundFailures(child)).toEqual([]);
          for (const line of child.lines) {
            const [id, payload] = line.split(" ");
            ids.push(id!);
            sent.push(payload!);
          }
        }
        expect([...ids].sort()).toEqual(ids);
        expect(new Set(ids).size).toBe(ids.length);
        const queue = await Queue.open(new LocalStore(dir), "ids", { flushIntervalMs: 0 });
        const got = await drain(queue);
        // Enqueues under way at the kill may have landed too: the acknowledged ones come in their order among them.
        expect(got.filter((p) => sent.includes(p))).toEqual(sent);
        expect(new Set(got).size).toBe(got.length);
        await queue.close();
      }),
  );
});
