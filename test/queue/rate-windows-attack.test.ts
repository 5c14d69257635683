/**
 * @module Attack on rate windows with counts: a queue's own rate limit and
 * a flow rule's, both keyed, under a clock that jumps forward and back and
 * owners replaced at random points between claims (fenced without closing,
 * or closed). In time as it really passed (forward moves only: a clock
 * that goes back counts the claims after the new now as made now, which
 * only holds them longer), no key may see more acknowledged claims than
 * its limit in any window of its period; and a key is never held back for
 * much longer than one period after its last claim, however far the clock
 * went back.
 */
import { describe, expect, it } from "vitest";
import { FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER, MemoryStore, MockClock, Queue } from "taquba";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);

const OWN = { limit: 3, periodMs: 1_000 };
const RULE = { limit: 2, periodMs: 1_500 };
const T0 = 5_000_000_000;

/** The most claims in any window of `period` among sorted `times`. */
function busiestWindow(times: number[], period: number): number {
  let most = 0;
  for (let i = 0, lo = 0; i < times.length; i++) {
    while (times[lo]! <= times[i]! - period) lo++;
    most = Math.max(most, i - lo + 1);
  }
  return most;
}

describe("attack: rate windows with counts under clock jumps and owner restarts", () => {
  it("never more claims per key than its limit in any window of real time, and no key held past a period of quiet", { timeout: 120_000 }, async () => {
    const r = testRandom("rate windows attack");
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const quiet = { error: () => undefined, warn: () => undefined, info: () => undefined };
    const opts = { clock, flushIntervalMs: 0, logger: quiet, queueConfigs: { jobs: { rateLimit: { ...OWN, key: "{tenant}" } } } };
    const open = async () => {
      const q = await Queue.open(store, "q", opts);
      q.defineFlowRules("jobs", { report: { rateLimit: RULE } });
      return q;
    };
    let queue = await open();
    // Half the jobs under the flow rule (keyed by region), all under the queue's own limit (keyed by tenant).
    const jobs = Array.from({ length: 900 }, (_, i) => {
      const ruled = i % 2 === 0;
      const headers: Record<string, string> = { tenant: `t${i % 3}` };
      if (ruled) Object.assign(headers, { [FLOW_RULE_HEADER]: "report", [FLOW_RATE_KEY_HEADER]: `r${i % 4}` });
      return { queueName: "jobs", payload: enc(`j${i}`), opts: { headers } };
    });
    await queue.enqueueBatch(jobs);
    // Real time: moves with forward jumps only.
    let real = 0;
    const acked: { tenant: string; region: string | undefined; at: number }[] = [];
    let restarts = 0;
    let backJumps = 0;
    for (let step = 0; step < 400; step++) {
      const c = r.int(100);
      if (c < 4) {
        // A crash: the next owner fences this one without it closing.
        restarts++;
        const dead = queue;
        queue = await open();
        await dead.close().catch(() => undefined);
      } else if (c < 7) {
        restarts++;
        await queue.close();
        queue = await open();
      }
      for (const j of await queue.claimBatch("jobs", 1 + r.int(6))) {
        // Some claims are never acknowledged before the next crash: lost with it, they run again.
        if (r.int(10) === 0) continue;
        await queue.ack(j);
        acked.push({ tenant: j.headers.tenant!, region: j.headers[FLOW_RATE_KEY_HEADER], at: real });
      }
      if (r.int(3) === 0) await queue.flush();
      const jump = r.int(20);
      if (jump === 0) {
        // Back by up to a day: real time stands still.
        clock.set(clock.now() - 1 - r.int(86_400_000));
        backJumps++;
      } else if (jump === 1) {
        const d = 1 + r.int(5_000);
        clock.advance(d);
        real += d;
      } else {
        const d = r.int(150);
        clock.advance(d);
        real += d;
      }
    }
    // Liveness: whatever the clock did, a claim goes through after a quiet period as long as both
    // periods, counted from the first claim that sees the clock where it is now (a claim dated after
    // the clock counts as made when a claim sees it: the queue cannot know how much real time passed).
    const seen = await queue.claimBatch("jobs", 1);
    if (seen.length === 0) {
      clock.advance(RULE.periodMs);
      expect((await queue.claimBatch("jobs", 1)).length, "a key still held after a full period of quiet").toBe(1);
    }
    await queue.close();
    expect(restarts, "owners replaced").toBeGreaterThan(5);
    expect(backJumps, "clock jumps back").toBeGreaterThan(5);
    expect(acked.length).toBeGreaterThan(100);
    for (const t of ["t0", "t1", "t2"]) {
      const times = acked.filter((a) => a.tenant === t).map((a) => a.at);
      expect(busiestWindow(times, OWN.periodMs), `tenant ${t}`).toBeLessThanOrEqual(OWN.limit);
    }
    for (const region of ["r0", "r1", "r2", "r3"]) {
      const times = acked.filter((a) => a.region === region).map((a) => a.at);
      expect(busiestWindow(times, RULE.periodMs), `region ${region} of the flow rule`).toBeLessThanOrEqual(RULE.limit);
    }
  });
});
