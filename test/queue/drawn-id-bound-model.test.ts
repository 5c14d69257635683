/**
 * @module The drawn-id bound (`CallerIdBound`) against a model: enqueues,
 * single and batched, whose caller ids sit just before, on and past the
 * ids the queue draws next (taken from the last id drawn, and from the mark
 * a restart continues from), with ids of other shapes sorting among them,
 * the clock moved back and forward, and restarts. Whatever the bound skips,
 * no generated job takes an id a caller's job holds: every enqueue that
 * was acknowledged drains once, a caller id already held is refused, and
 * the generated ids are distinct and growing.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, MockClock, type Queue } from "taquba";
import { encodeTime } from "ulid";
import { AHEAD_MS } from "../../runtime/queue/seq-high-water.js";
import { nextUlid, ulidAfter } from "../support/next-ulid.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { drainPayloads, enc, openQueue } from "./helpers.js";

const START = 1_700_000_000_000;

/** The id a queue opened now continues from (see seq-high-water.ts). */
const restartMark = (clock: MockClock) => `${encodeTime(clock.now() + AHEAD_MS, 10)}${"0".repeat(16)}`;

/** A caller id chosen near the draws: before, on and past the next ones, or of another shape sorting among them. */
function nearId(r: TestRandom, lastDrawn: string, clock: MockClock): string {
  const base = r.int(3) === 0 ? restartMark(clock) : lastDrawn;
  switch (r.int(6)) {
    case 0:
      // One id of the frontier written in lower case: not ULID-shaped, so never a draw, and sorting after them.
      return ulidAfter(base, 1 + r.int(4)).toLowerCase();
    case 1:
      // A short id sorting among the ULIDs.
      return `${base.slice(0, 10 + r.int(10))}`;
    default:
      return ulidAfter(base, r.int(12));
  }
}

describe("the drawn-id bound against a model", () => {
  it("never lets a generated job take an id a caller's job holds, across clock moves and restarts", { timeout: 120_000 }, async () => {
    const r = testRandom("drawn id bound model");
    const store = new MemoryStore();
    const clock = new MockClock(START);
    let { queue } = (await openQueue({ store, clock })) as { queue: Queue };
    /** Every job id held, with its payload. */
    const held = new Map<string, string>();
    let lastDrawn = restartMark(clock);
    let drawnBefore = "";
    let n = 0;
    let refused = 0;
    for (let step = 0; step < 400; step++) {
      const roll = r.int(20);
      if (roll === 0) {
        await queue.close();
        ({ queue } = (await openQueue({ store, clock })) as { queue: Queue });
        // Draws after a restart continue above every id drawn before it.
        continue;
      }
      if (roll === 1) {
        // The clock goes back up to two seconds, or forward.
        clock.set(Math.max(START, clock.now() + (r.int(2) === 0 ? -r.int(2000) : r.int(3000))));
        continue;
      }
      const items = Array.from({ length: 1 + r.int(roll < 10 ? 1 : 12) }, () => {
        const payload = `p${n++}`;
        return r.int(3) === 0 ? { payload, jobId: nearId(r, lastDrawn, clock) } : { payload };
      });
      const callerIds = items.flatMap((i) => (i.jobId === undefined ? [] : [i.jobId]));
      const clash = callerIds.some((id) => held.has(id)) || new Set(callerIds).size < callerIds.length;
      try {
        const out =
          items.length === 1 && r.int(2) === 0
            ? [await queue.enqueue("q", enc(items[0]!.payload), items[0]!.jobId === undefined ? {} : { jobId: items[0]!.jobId })]
            : await queue.enqueueBatch(items.map((i) => ({ queueName: "q", payload: enc(i.payload), opts: i.jobId === undefined ? {} : { jobId: i.jobId } })));
        out.forEach((o, i) => {
          const item = items[i]!;
          expect(o.newlyEnqueued, `step ${step}, item ${i}`).toBe(true);
          expect(held.has(o.jobId), `step ${step}: ${o.jobId} given twice`).toBe(false);
          if (item.jobId !== undefined) expect(o.jobId).toBe(item.jobId);
          else {
            // Generated ids grow, whatever the clock did.
            expect(o.jobId > drawnBefore, `step ${step}: ${o.jobId} after ${drawnBefore}`).toBe(true);
            drawnBefore = o.jobId;
            lastDrawn = o.jobId;
          }
          held.set(o.jobId, item.payload);
        });
      } catch (err) {
        // A caller id already held (or twice in one batch) refuses the whole enqueue; nothing is written.
        if (!(err instanceof DuplicateJobIdError)) throw err;
        // Refused: a caller id held already or twice in the batch, or one a generated item before it in the same
        // batch drew (the draw looks at what is written, not at the batch's later items).
        const at = items.findIndex((i) => i.jobId === err.jobId);
        const drawnBeforeIt = at > 0 && items.slice(0, at).some((i) => i.jobId === undefined);
        expect(clash || drawnBeforeIt, `step ${step}: ${err.jobId} refused`).toBe(true);
        refused++;
      }
    }
    expect((await queue.view().stats("q")).pending).toBe(held.size);
    await queue.close();
    ({ queue } = (await openQueue({ store, clock })) as { queue: Queue });
    const drained = await drainPayloads(queue, "q");
    expect(drained.sort()).toEqual([...held.values()].sort());
    expect(refused + held.size, "every enqueue counted").toBeGreaterThan(0);
    await queue.close();
  });

  it("a caller id equal to the next draw, noted before a restart and one after, is passed over each time", async () => {
    const { store, clock, queue: first } = await openQueue({ clock: new MockClock(START) });
    const a = (await first.enqueue("q", enc("a"))).jobId;
    await first.enqueue("q", enc("taken-next"), { jobId: nextUlid(a) });
    expect((await first.enqueue("q", enc("b"))).jobId).toBe(ulidAfter(a, 2));
    // The clock back a second: the draws go on from the last one, still passing over a caller's id.
    clock.set(clock.now() - 1000);
    await first.enqueue("q", enc("taken-later"), { jobId: ulidAfter(a, 3) });
    expect((await first.enqueue("q", enc("c"))).jobId).toBe(ulidAfter(a, 4));
    await first.close();
    // The mark the first enqueue stored: a second after the millisecond its id was drawn in.
    const mark = `${encodeTime(START + AHEAD_MS, 10)}${"0".repeat(16)}`;
    const { queue } = await openQueue({ store, clock });
    await queue.enqueue("q", enc("taken-mark"), { jobId: nextUlid(mark) });
    const out = await queue.enqueueBatch(Array.from({ length: 3 }, (_, i) => ({ queueName: "q", payload: enc(`g${i}`) })));
    expect(out.map((o) => o.jobId)).toEqual([2, 3, 4].map((k) => ulidAfter(mark, k)));
    await expect(queue.enqueue("q", enc("again"), { jobId: nextUlid(mark) })).rejects.toBeInstanceOf(DuplicateJobIdError);
    expect(await drainPayloads(queue, "q")).toEqual(["a", "taken-next", "b", "taken-later", "c", "taken-mark", "g0", "g1", "g2"]);
    await queue.close();
  });
});
