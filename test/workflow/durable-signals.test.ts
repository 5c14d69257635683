/**
 * @module Durable signals: delivery to a waiting step, buffering, races with
 * wait registration, and crashes mid-delivery that must neither lose nor
 * duplicate a signal.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome, type Step, type StepRunner } from "taquba";
import { testRandom } from "../support/seed.js";
import { dec, enc, holdableStore, openEnv, settle, until } from "./helpers.js";

const HOUR = 3_600_000;

/** Step 0 waits on the key in its payload; step 1 reports the signal it observed. */
function approvalRunner(observed: Array<Uint8Array | null | undefined>): StepRunner {
  return {
    async runStep(s: Step) {
      if (s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, dec(s.payload), HOUR);
      observed.push(s.signal);
      return StepOutcome.succeed(s.signal == null ? enc("timeout") : s.signal);
    },
  };
}

async function waiting(env: Awaited<ReturnType<typeof openEnv>>, runId: string) {
  await until(async () => (await env.runtime.status(runId))?.step === 1, `${runId} waiting`);
}

describe("durable signals", () => {
  it("delivers a signal to a waiting run", async () => {
    const seen: Array<Uint8Array | null | undefined> = [];
    const env = await openEnv(approvalRunner(seen));
    await env.runtime.submit({ input: enc("approve:1"), runId: "a1" });
    await waiting(env, "a1");
    expect(await env.runtime.status("a1")).toMatchObject({ state: "pending", step: 1 });
    expect(await env.runtime.signal("approve:1", enc("yes"))).toBe("delivered");
    const end = await env.runtime.wait("a1");
    expect(dec(end.outcome!.result)).toBe("yes");
    expect(seen.map(dec)).toEqual(["yes"]);
    expect(await env.runtime.clearSignal("approve:1")).toBe(false);
    await env.stop();
  });

  it("buffers a signal with no waiter; the next waiter consumes it at registration", async () => {
    const seen: Array<Uint8Array | null | undefined> = [];
    const env = await openEnv(approvalRunner(seen));
    expect(await env.runtime.signal("k", enc("early"))).toBe("buffered");
    expect(await env.runtime.signal("k", enc("replaced"))).toBe("buffered");
    await env.runtime.submit({ input: enc("k"), runId: "b" });
    const end = await env.runtime.wait("b");
    expect(dec(end.outcome!.result)).toBe("replaced");
    expect(await env.runtime.clearSignal("k")).toBe(false); // consumed
    await env.stop();
  });

  it("wakes the step with a null signal when the timeout fires", async () => {
    const seen: Array<Uint8Array | null | undefined> = [];
    const env = await openEnv(approvalRunner(seen));
    await env.runtime.submit({ input: enc("t"), runId: "t" });
    await waiting(env, "t");
    env.clock.advance(HOUR);
    const end = await env.runtime.wait("t");
    expect(seen).toEqual([null]);
    expect(dec(end.outcome!.result)).toBe("timeout");
    // A signal after the timeout is buffered for the next waiter.
    expect(await env.runtime.signal("t", enc("late"))).toBe("buffered");
    expect(await env.runtime.clearSignal("t")).toBe(true);
    expect(await env.runtime.clearSignal("t")).toBe(false);
    await env.stop();
  });

  it("a step not continued on a signal sees undefined", async () => {
    let signal: unknown = "unset";
    const env = await openEnv({
      async runStep(s) {
        signal = s.signal;
        return StepOutcome.succeed(s.payload);
      },
    });
    await env.runtime.submit({ input: enc("x"), runId: "u" });
    await env.runtime.wait("u");
    expect(signal).toBeUndefined();
    await env.stop();
  });

  it("fails a run that registers a second waiter on a key", async () => {
    const seen: Array<Uint8Array | null | undefined> = [];
    const env = await openEnv(approvalRunner(seen));
    await env.runtime.submit({ input: enc("shared"), runId: "first" });
    await waiting(env, "first");
    await env.runtime.submit({ input: enc("shared"), runId: "second" });
    const end = await env.runtime.wait("second");
    expect(end.termination).toMatchObject({ status: "failed", errorKind: "permanent" });
    expect(end.termination.error).toContain("already has a waiter");
    expect(await env.runtime.signal("shared", enc("go"))).toBe("delivered");
    expect(dec((await env.runtime.wait("first")).outcome!.result)).toBe("go");
    await env.stop();
  });

  it("a cancelled waiter releases its key", async () => {
    const seen: Array<Uint8Array | null | undefined> = [];
    const env = await openEnv(approvalRunner(seen));
    await env.runtime.submit({ input: enc("key"), runId: "w" });
    await waiting(env, "w");
    expect(await env.runtime.cancel("w")).toBe(true);
    expect(await env.runtime.signal("key", enc("s"))).toBe("buffered");
    await env.stop();
  });

  it("survives restarts: waiting, delivered and buffered paths", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const seen: Array<Uint8Array | null | undefined> = [];
    const env = await openEnv(approvalRunner(seen), { store, clock });
    await env.runtime.submit({ input: enc("r1"), runId: "r1" });
    await env.runtime.submit({ input: enc("r2"), runId: "r2" });
    await waiting(env, "r1");
    await waiting(env, "r2");
    await env.stop();

    const env2 = await openEnv(approvalRunner(seen), { store, clock, start: false });
    expect(await env2.runtime.signal("r1", enc("after-restart"))).toBe("delivered");
    expect(await env2.runtime.signal("r3", enc("for-later"))).toBe("buffered");
    await env2.stop();

    const env3 = await openEnv(approvalRunner(seen), { store, clock });
    expect(dec((await env3.runtime.wait("r1")).outcome!.result)).toBe("after-restart");
    clock.advance(HOUR);
    expect(dec((await env3.runtime.wait("r2")).outcome!.result)).toBe("timeout");
    await env3.runtime.submit({ input: enc("r3"), runId: "r3" });
    expect(dec((await env3.runtime.wait("r3")).outcome!.result)).toBe("for-later");
    await env3.stop();
  });

  it("a redelivered woken step observes the same signal", async () => {
    const observed: string[] = [];
    let failOnce = true;
    const env = await openEnv({
      async runStep(s) {
        if (s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, "redo", HOUR);
        observed.push(dec(s.signal));
        if (failOnce) {
          failOnce = false;
          throw new Error("transient");
        }
        return StepOutcome.succeed(s.signal!);
      },
    });
    await env.runtime.submit({ input: enc("x"), runId: "redo" });
    await waiting(env, "redo");
    await env.runtime.signal("redo", enc("sig"));
    await until(() => observed.length === 1, "first delivery");
    await settle();
    env.clock.advance(1_000);
    await env.runtime.wait("redo");
    expect(observed).toEqual(["sig", "sig"]);
    await env.stop();
  });

  it("a redelivered timed-out step observes the timeout again; a signal sent meanwhile waits for the next waiter", async () => {
    const observed: Array<string | null | undefined> = [];
    const env = await openEnv({
      async runStep(s) {
        if (s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, "late", HOUR);
        observed.push(s.signal == null ? s.signal : dec(s.signal));
        if (observed.length === 1) throw new Error("transient");
        return StepOutcome.succeed(s.signal ?? enc("timeout"));
      },
    });
    await env.runtime.submit({ input: enc("x"), runId: "late" });
    await waiting(env, "late");
    env.clock.advance(HOUR);
    await until(() => observed.length === 1, "first delivery after the timeout");
    await settle();
    expect(await env.runtime.signal("late", enc("sig"))).toBe("buffered");
    env.clock.advance(1_000);
    expect(dec((await env.runtime.wait("late")).outcome!.result)).toBe("timeout");
    expect(observed).toEqual([null, null]);
    expect(await env.runtime.clearSignal("late")).toBe(true);
    await env.stop();
  });
});

describe("signals racing registrations", () => {
  // A liveness check over random timings: it holds while either the per-key lock or the
  // post-registration buffer check is in place. The deterministic race is the next describe.
  it("every signal reaches its waiter without waiting for the timeout, whichever comes first", async () => {
    const seen: Array<Uint8Array | null | undefined> = [];
    const env = await openEnv(approvalRunner(seen));
    const n = 20;
    const { int } = testRandom("signals racing registrations");
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const sub = env.runtime.submit({ input: enc(`race:${i}`), runId: `race-${i}` });
        // Signal before, during or after the registration.
        await new Promise((r) => setTimeout(r, int(10)));
        await env.runtime.signal(`race:${i}`, enc(`sig-${i}`));
        await sub;
      }),
    );
    await until(async () => {
      for (let i = 0; i < n; i++) if ((await env.runtime.status(`race-${i}`))?.state !== "terminated") return false;
      return true;
    }, "every run terminated without advancing the clock");
    for (let i = 0; i < n; i++) expect(dec((await env.runtime.outcome(`race-${i}`))!.result)).toBe(`sig-${i}`);
    expect(seen.filter((s) => s === null)).toEqual([]);
    await env.stop();
  });
});

describe("a signal during a registration that consumes a buffered one", () => {
  it("keeps the later signal buffered for the next waiter (registration and signal take turns per key)", async () => {
    // Hold the registering settlement between reading the buffer and committing: its next
    // step's payload is large enough to be offloaded, and that object's write is held.
    let holding = false;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = 0;
    const inner = new MemoryStore();
    const store = {
      get: (k: string) => inner.get(k),
      delete: (k: string) => inner.delete(k),
      list: (p: string, o?: { startAfter?: string }) => inner.list(p, o),
      async put(k: string, b: Uint8Array, o?: { ifNoneMatch?: "*" }) {
        if (holding && k.includes("/payloads/")) {
          held++;
          await released;
        }
        return inner.put(k, b, o);
      },
    };
    const big = new Uint8Array(4096).fill(7);
    const env = await openEnv(
      {
        async runStep(s) {
          if (s.stepNumber === 0 && dec(s.payload) !== "again") return StepOutcome.continueOnSignal(big, "k", HOUR);
          if (s.stepNumber === 0) return StepOutcome.continueOnSignal(enc("small"), "k", HOUR);
          return StepOutcome.succeed(s.signal ?? enc("timeout"));
        },
      },
      { store, queueOptions: { payloadOffloadBytes: 1024 } },
    );
    expect(await env.runtime.signal("k", enc("first"))).toBe("buffered");
    holding = true;
    await env.runtime.submit({ input: enc("x"), runId: "a" });
    // Run a has read the buffered "first" and staged its consumption; its commit is held.
    await until(() => held > 0, "the registering settlement held");
    const second = env.runtime.signal("k", enc("second"));
    await settle(20);
    holding = false;
    release();
    expect(await second).toBe("buffered");
    expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("first");
    // "second" arrived after "first" was taken: it waits for the next waiter, it is not lost.
    await env.runtime.submit({ input: enc("again"), runId: "b" });
    await until(async () => (await env.runtime.status("b"))?.state === "terminated", "b consuming the buffered signal at registration", 2000);
    expect(dec((await env.runtime.outcome("b"))!.result)).toBe("second");
    expect(await env.runtime.clearSignal("k")).toBe(false);
    await env.stop();
  });
});

describe("a crash during a delivery", () => {
  it("never hands a signal delivered to one waiter to a later waiter", async () => {
    const store = holdableStore();
    const clock = new MockClock();
    const seen: Array<Uint8Array | null | undefined> = [];
    const env1 = await openEnv(approvalRunner(seen), { store, clock });
    await env1.runtime.submit({ input: enc("k"), runId: "a" });
    await waiting(env1, "a");
    await env1.stop();

    // No worker, so the signal's own commits are the only WAL writes: let two land, then
    // crash (the rest never becomes durable).
    const env2 = await openEnv(approvalRunner(seen), { store, clock, start: false });
    store.hold(2);
    let sent = false;
    void env2.runtime.signal("k", enc("P")).then(
      () => (sent = true),
      () => undefined,
    );
    await until(() => sent || store.held > 0, "the signal delivered or its third commit held");
    // env2 is abandoned as a crashed process would be; the next process opens what is durable.
    const env3 = await openEnv(approvalRunner(seen), { store: store.inner, clock });
    expect(dec((await env3.runtime.wait("a")).outcome!.result)).toBe("P");
    await env3.runtime.submit({ input: enc("k"), runId: "b" });
    await until(async () => (await env3.runtime.status("b"))?.step === 1, "b past its registration");
    clock.advance(HOUR);
    expect(dec((await env3.runtime.wait("b")).outcome!.result)).toBe("timeout");
    await env3.stop();
  });
});

describe("a crash while a step consumes a late signal", () => {
  it("never leaves the consumed signal buffered for the next waiter", async () => {
    const inner = new MemoryStore();
    const text = (b: Uint8Array) => Buffer.from(b).toString("latin1");
    // Once armed, holds (forever: a crash) a WAL write that removes the buffered signal
    // without recording it for the step in the same commit.
    let armed = false;
    let held = 0;
    const store = {
      get: (k: string) => inner.get(k),
      delete: (k: string) => inner.delete(k),
      list: (p: string, o?: { startAfter?: string }) => inner.list(p, o),
      async put(k: string, b: Uint8Array, o?: { ifNoneMatch?: "*" }) {
        if (armed && k.includes("/wal/") && text(b).includes("signal-buf/") && !text(b).includes("signal-delivered/")) {
          held++;
          await new Promise<void>(() => undefined);
        }
        return inner.put(k, b, o);
      },
    };
    const clock = new MockClock();
    const seen: Array<Uint8Array | null | undefined> = [];
    const env1 = await openEnv(approvalRunner(seen), { store, clock });
    await env1.runtime.submit({ input: enc("k"), runId: "a" });
    await waiting(env1, "a");
    await env1.stop();

    // The timeout promotes the waiting step; a signal then finds no waiter to wake and is buffered.
    const env2 = await openEnv(approvalRunner(seen), { store, clock, start: false });
    clock.advance(HOUR);
    await env2.queue.runMaintenance();
    expect(await env2.runtime.signal("k", enc("P"))).toBe("buffered");
    await env2.stop();

    // The step's delivery consumes the buffered signal; a crash follows its first commit.
    armed = true;
    const env3 = await openEnv(approvalRunner(seen), { store, clock });
    await until(async () => held > 0 || (await env3.runtime.status("a"))?.state === "terminated", "a consumed the signal");
    const env4 = await openEnv(approvalRunner(seen), { store: inner, clock });
    expect(dec((await env4.runtime.wait("a")).outcome!.result)).toBe("P");
    await env4.runtime.submit({ input: enc("k"), runId: "b" });
    await until(async () => (await env4.runtime.status("b"))?.step === 1, "b past its registration");
    clock.advance(HOUR);
    expect(dec((await env4.runtime.wait("b")).outcome!.result)).toBe("timeout");
    await env4.stop();
  });
});
