/**
 * @module The runtime's one poll for waits without a deadline: the rounds
 * of many waits share one timer, every round is still woken at most one
 * poll interval after it began (so a termination nobody announces, one
 * committed by another process, is noticed), a wait with a timeout keeps
 * its own deadline, and the timer is dropped once no round waits.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MockClock, StepOutcome } from "taquba";
import { WaitPoll } from "../../runtime/workflow/runs/wait-poll.js";
import { runEventsFor } from "../../runtime/workflow/runtime-core.js";
import { testRandom } from "../support/seed.js";
import { dec, enc, openEnv, runnerOf, settle, until } from "./helpers.js";

const POLL_MS = 1_000;

/** A runner whose steps of run `id` wait for `release(id)`, then succeed with the id. */
function heldRunner() {
  const held = new Map<string, () => void>();
  const started = new Set<string>();
  const runner = runnerOf(async (s) => {
    started.add(s.runId);
    await new Promise<void>((r) => held.set(s.runId, r));
    return StepOutcome.succeed(enc(s.runId));
  });
  return { runner, started, release: (id: string) => held.get(id)!() };
}

describe("waits without a deadline share one poll", () => {
  it("five waits on runs that end unannounced arm one timer, and all see their ends at the next poll", async () => {
    const h = heldRunner();
    const env = await openEnv(h.runner, { configure: (b) => b.pollIntervalMs(POLL_MS) });
    try {
      const ids = ["r0", "r1", "r2", "r3", "r4"];
      for (const id of ids) await env.runtime.submit({ input: enc("x"), runId: id });
      await until(() => h.started.size === ids.length, "every run's step held");
      await settle();
      const before = env.clock.pendingTimers;
      const ended = new Set<string>();
      const waits = ids.map((id) => env.runtime.wait(id).then((end) => (ended.add(id), end)));
      await until(() => env.clock.pendingTimers > before, "the poll armed");
      await settle();
      // One timer for the five rounds, not one each.
      expect(env.clock.pendingTimers).toBe(before + 1);
      // As if another process ended the runs: this process announces no termination.
      runEventsFor(env.queue).terminated = () => undefined;
      for (const id of ids) h.release(id);
      for (const id of ids) await until(async () => (await env.runtime.status(id))?.state === "terminated", `${id} ended`);
      await settle();
      expect(ended.size).toBe(0);
      env.clock.advance(POLL_MS);
      const ends = await Promise.all(waits);
      expect(ends.map((e) => dec(e.outcome?.result))).toEqual(ids);
    } finally {
      await env.stop();
    }
  });

  it("a wait that begins after the poll was armed still sees an unannounced end within one interval of its start", async () => {
    const h = heldRunner();
    const env = await openEnv(h.runner, { configure: (b) => b.pollIntervalMs(POLL_MS) });
    try {
      await env.runtime.submit({ input: enc("x"), runId: "first" });
      await env.runtime.submit({ input: enc("x"), runId: "late" });
      await until(() => h.started.size === 2, "both steps held");
      runEventsFor(env.queue).terminated = () => undefined;
      const ended: string[] = [];
      const first = env.runtime.wait("first").then((end) => (ended.push("first"), end));
      await until(() => env.clock.pendingTimers > 0, "the poll armed");
      await settle();
      env.clock.advance(POLL_MS / 2);
      const late = env.runtime.wait("late").then((end) => (ended.push("late"), end));
      await settle();
      h.release("first");
      h.release("late");
      for (const id of ["first", "late"]) await until(async () => (await env.runtime.status(id))?.state === "terminated", `${id} ended`);
      await settle();
      expect(ended).toEqual([]);
      // The first wait's interval is over: it sees its run's end.
      env.clock.advance(POLL_MS / 2);
      expect(dec((await first).outcome?.result)).toBe("first");
      // The late wait's interval, begun half a poll later, is over too by now: it has seen its end.
      env.clock.advance(POLL_MS / 2);
      expect(dec((await late).outcome?.result)).toBe("late");
    } finally {
      await env.stop();
    }
  });

  it("a wait with a timeout ends at its deadline while a wait without one goes on", async () => {
    const h = heldRunner();
    const env = await openEnv(h.runner, { configure: (b) => b.pollIntervalMs(POLL_MS) });
    try {
      await env.runtime.submit({ input: enc("x"), runId: "open" });
      await env.runtime.submit({ input: enc("x"), runId: "timed" });
      await until(() => h.started.size === 2, "both steps held");
      let openEnded = false;
      const open = env.runtime.wait("open").then((end) => ((openEnded = true), end));
      await until(() => env.clock.pendingTimers > 0, "the poll armed");
      await settle();
      let timedEnded = false;
      const timed = env.runtime.waitTimeout("timed", 300).then((end) => ((timedEnded = true), end));
      await settle();
      env.clock.advance(299);
      await settle();
      expect(timedEnded).toBe(false);
      env.clock.advance(1);
      expect(await timed).toBeNull();
      // The poll's interval passes: the wait without a deadline reads its run, still active, and waits on.
      env.clock.advance(POLL_MS);
      await settle();
      expect(openEnded).toBe(false);
      // Its run's announced end wakes it at once.
      h.release("open");
      expect(dec((await open).outcome?.result)).toBe("open");
      h.release("timed");
    } finally {
      await env.stop();
    }
  });

  it("a cancelled run's wait ends with the cancellation, and no poll timer is left once no round waits", async () => {
    const env = await openEnv(
      runnerOf(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 100 * POLL_MS) : StepOutcome.succeed(enc("done")))),
      { configure: (b) => b.pollIntervalMs(POLL_MS) },
    );
    try {
      await env.runtime.submit({ input: enc("x"), runId: "slow" });
      await until(async () => (await env.runtime.status("slow"))?.step === 1, "the second step scheduled");
      await settle();
      const before = env.clock.pendingTimers;
      const waiting = env.runtime.wait("slow");
      await until(() => env.clock.pendingTimers === before + 1, "the poll armed");
      env.clock.advance(POLL_MS);
      await until(() => env.clock.pendingTimers === before + 1, "the poll armed again");
      expect(await env.runtime.cancel("slow")).toBe(true);
      const end = await waiting;
      expect(end.termination.status).toBe("cancelled");
      await settle();
      // The cancel removed the scheduled step's timer, if it had one of its own; the poll is gone.
      expect(env.clock.pendingTimers).toBeLessThanOrEqual(before);
    } finally {
      await env.stop();
    }
  });
});

describe("waits in the shared poll when the runtime closes", () => {
  it("many waits on runs that never start, some of them cancelled first, settle each as it should, and the close leaves no poll timer", async () => {
    // No worker: the runs never start, so their waits sit in the poll until a cancel or the close.
    const env = await openEnv(
      runnerOf(async () => StepOutcome.succeed(enc("never"))),
      { start: false, configure: (b) => b.pollIntervalMs(60_000) },
    );
    const before = env.clock.pendingTimers;
    const ids = Array.from({ length: 40 }, (_, i) => `r${i}`);
    for (const id of ids) await env.runtime.submit({ input: enc("x"), runId: id });
    const waits = ids.map((id) =>
      env.runtime.wait(id).then(
        (end) => end.termination.status as string,
        (e: unknown) => e,
      ),
    );
    // One with the longest timeout there is (ten years): a timer of its own, dropped with the close too.
    const timed = env.runtime.waitTimeout("r0", 315_360_000_000).then(
      (end) => end?.termination.status,
      (e: unknown) => e,
    );
    await until(() => env.clock.pendingTimers >= before + 2, "the poll and the timed wait armed");
    await settle();
    // Half the runs cancelled while their waits are in the poll: answered at once, the rest still waiting.
    for (const id of ids.slice(20)) expect(await env.runtime.cancel(id)).toBe(true);
    const cancelled = await Promise.all(waits.slice(20));
    expect(cancelled).toEqual(ids.slice(20).map(() => "cancelled"));
    // The poll's interval passes: the rest read their runs again, still active, and wait on.
    env.clock.advance(60_000);
    await settle();
    await env.runtime.close({ timeoutMs: 100 });
    const closed = await Promise.all(waits.slice(0, 20));
    for (const e of closed) expect(e).toBeInstanceOf(ClosedError);
    expect(await timed).toBeInstanceOf(ClosedError);
    await settle();
    expect(env.clock.pendingTimers).toBeLessThanOrEqual(before);
  });
});

describe("WaitPoll", () => {
  const waiter = () => {
    const w = { woken: 0, pollSlot: -1, wake: () => void w.woken++ };
    return w;
  };

  it("wakes every round joined before it fires, one interval after the first joined, with one timer", () => {
    const clock = new MockClock(0);
    const poll = new WaitPoll(clock, 100);
    const a = waiter();
    const b = waiter();
    poll.join(a);
    clock.advance(60);
    poll.join(b);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(39);
    expect([a.woken, b.woken]).toEqual([0, 0]);
    clock.advance(1);
    return settle().then(() => {
      expect([a.woken, b.woken]).toEqual([1, 1]);
      expect(clock.pendingTimers).toBe(0);
    });
  });

  it("re-arms for the first round that joins after it fired, and drops its timer once every round left", async () => {
    const clock = new MockClock(0);
    const poll = new WaitPoll(clock, 100);
    const a = waiter();
    poll.join(a);
    clock.advance(100);
    await settle();
    poll.leave(a);
    expect(a.woken).toBe(1);
    // A new round at 150: its poll comes at 250, not at 200.
    clock.advance(50);
    const b = waiter();
    poll.join(b);
    clock.advance(99);
    await settle();
    expect(b.woken).toBe(0);
    clock.advance(1);
    await settle();
    expect(b.woken).toBe(1);
    poll.leave(b);
    // Rounds that end before the poll (woken by their run's end) drop it with the last of them.
    const c = waiter();
    const d = waiter();
    poll.join(c);
    poll.join(d);
    expect(clock.pendingTimers).toBe(1);
    poll.leave(c);
    expect(clock.pendingTimers).toBe(1);
    poll.leave(d);
    await settle();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(1_000);
    await settle();
    expect([c.woken, d.woken]).toEqual([0, 0]);
  });

  it("holds only the rounds still waiting: rounds that come and go under a long poll leave nothing behind", async () => {
    // A poll of an hour (a process that counts on announced ends) and one wait that lasts: every other
    // round, woken by its run's end, leaves long before the timer fires, and must not stay held until then.
    const clock = new MockClock(0);
    const poll = new WaitPoll(clock, 3_600_000);
    const long = waiter();
    poll.join(long);
    for (let i = 0; i < 10_000; i++) {
      const w = waiter();
      poll.join(w);
      poll.leave(w);
    }
    expect(poll.held).toBe(1);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(3_600_000);
    await settle();
    expect(long.woken).toBe(1);
    expect(poll.held).toBe(0);
    poll.leave(long);
    expect(clock.pendingTimers).toBe(0);
  });

  it("wakes every round still joined within one interval of its join, whatever order rounds leave in (a model of the rounds)", async () => {
    const rnd = testRandom("wait poll rounds");
    const interval = 100;
    const clock = new MockClock(0);
    const poll = new WaitPoll(clock, interval);
    type W = ReturnType<typeof waiter> & { joinedAt: number; left: boolean };
    const live: W[] = [];
    for (let op = 0; op < 800; op++) {
      const r = rnd.int(10);
      if (r < 4) {
        const w = Object.assign(waiter(), { joinedAt: clock.now(), left: false });
        poll.join(w);
        live.push(w);
      } else if (r < 7 && live.length > 0) {
        // Any round leaves, woken or not: the first, the last or one between.
        const w = live.splice(rnd.int(live.length), 1)[0]!;
        poll.leave(w);
        w.left = true;
      } else {
        clock.advance(1 + rnd.int(interval / 2));
        await settle();
        // A round woken goes on and joins again (as a wait's next round does), under a fresh waiter.
        for (let i = 0; i < live.length; i++) {
          const w = live[i]!;
          if (w.woken > 0) {
            poll.leave(w);
            const again = Object.assign(waiter(), { joinedAt: clock.now(), left: false });
            poll.join(again);
            live[i] = again;
          }
        }
      }
      for (const w of live) expect(clock.now() - w.joinedAt, "a round still joined after a whole interval unwoken").toBeLessThan(interval);
      // Held: the rounds still joined and not yet woken, no more.
      expect(poll.held).toBe(live.filter((w) => w.woken === 0).length);
      expect(clock.pendingTimers).toBe(live.some((w) => w.woken === 0) ? 1 : 0);
    }
  });
});
