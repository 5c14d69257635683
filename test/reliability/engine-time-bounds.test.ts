/**
 * @module Time arithmetic at the API boundary (issue J, item 10). Delays,
 * timeouts, leases and instants that are NaN, Infinity, negative or absurd
 * (1e30) used to reach the index keys, where their text ("NaN", "1e+30")
 * sorts before every real time: a continueAfter(1e30) step ran at once, an
 * ensureAtLeast(Infinity) stopped lease expiry for every job. Every such
 * value is now a ValidationError where the caller passes it, and the key
 * encoding refuses it too.
 */
import { describe, expect, it } from "vitest";
import {
  ClaimLostError,
  MAX_DELAY_MS,
  MAX_INSTANT_MS,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  Trigger,
  ValidationError,
  WorkflowRuntime,
  type StepRunner,
} from "taquba";
import { padTime } from "../../runtime/queue/keys.js";
import { useBackends } from "./backends.js";

const ABSURD = [Number.NaN, Infinity, -Infinity, -1, 1e30, MAX_DELAY_MS + 1];
const enc = (s: string) => new TextEncoder().encode(s);
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
};

describe("delays and timeouts of steps", () => {
  it.each(ABSURD)("continueAfter, Trigger.after and a signal wait's timeout refuse %s", (ms) => {
    expect(() => StepOutcome.continueAfter(enc("p"), ms)).toThrow(ValidationError);
    expect(() => Trigger.after(ms)).toThrow(ValidationError);
    expect(() => StepOutcome.continueOnSignal(enc("p"), "order:1", ms)).toThrow(ValidationError);
    expect(() => Trigger.onSignal("order:1", ms)).toThrow(/from 0 to 315360000000 \(10 years\)/);
  });

  it("accept the documented maximum, ten years", () => {
    expect(StepOutcome.continueAfter(enc("p"), MAX_DELAY_MS)).toMatchObject({ when: { kind: "after", delayMs: MAX_DELAY_MS } });
  });

  it("waitTimeout refuses an absurd timeout", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "wf");
    const echo: StepRunner = { runStep: async (step) => StepOutcome.succeed(step.payload) };
    const runtime = WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook).build();
    const { runId } = await runtime.submit({ input: enc("in") });
    // A promise-returning call refuses by rejecting, not by throwing at the call.
    for (const ms of ABSURD) await expect(runtime.waitTimeout(runId, ms)).rejects.toBeInstanceOf(ValidationError);
    await expect(runtime.submit({ input: enc("in"), options: { runAt: 1e30 } })).rejects.toBeInstanceOf(ValidationError);
    await queue.close();
  });
});

describe("delays that bypass the constructors", () => {
  it("a hand-built continue outcome with a 1e30 delay fails the step instead of running the next one at once", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "wf", { flushIntervalMs: 0 });
    const steps: number[] = [];
    const runner: StepRunner = {
      runStep: async (step) => {
        steps.push(step.stepNumber);
        if (step.stepNumber > 0) return StepOutcome.succeed(step.payload);
        return { kind: "continue", payload: step.payload, when: { kind: "after", delayMs: 1e30 } };
      },
    };
    const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build();
    const worker = runtime.spawn();
    const { runId } = await runtime.submit({ input: enc("in") });
    const end = await runtime.wait(runId);
    expect(end.termination).toMatchObject({ status: "failed" });
    expect(steps.every((n) => n === 0)).toBe(true);
    await worker.shutdown();
    await queue.close();
  });

  it("builders refuse absurd poll intervals and retentions", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "wf");
    const echo: StepRunner = { runStep: async (step) => StepOutcome.succeed(step.payload) };
    const builder = () => WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook);
    for (const ms of [1e30, MAX_DELAY_MS + 1]) {
      expect(() => builder().pollIntervalMs(ms)).toThrow(ValidationError);
      expect(() => builder().memoRetention(ms)).toThrow(ValidationError);
      expect(() => builder().groupRetention(ms)).toThrow(ValidationError);
    }
    await queue.close();
  });
});

describe("the index key encoding", () => {
  it.each([Number.NaN, Infinity, -1, 1e30, 2 ** 53])("refuses %s instead of printing text that sorts before real times", (ms) => {
    expect(() => padTime(ms)).toThrow(ValidationError);
  });

  it("keeps numeric order for every accepted time", () => {
    expect(padTime(0) < padTime(1_700_000_000_000)).toBe(true);
    expect(padTime(1_700_000_000_000) < padTime(MAX_INSTANT_MS)).toBe(true);
    expect(padTime(MAX_INSTANT_MS) < padTime(Number.MAX_SAFE_INTEGER)).toBe(true);
  });
});

describe.each(useBackends())("leases and runAt on $name", (backend) => {
  it("ensureAtLeast refuses NaN and Infinity, and leases of other jobs still expire on time", async () => {
    const { store } = await backend.make();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "q", { flushIntervalMs: 0, clock });
    await queue.enqueue("q", enc("a"));
    await queue.enqueue("q", enc("b"));
    const a = (await queue.claim("q", 1000))!;
    const b = (await queue.claim("q", 1000))!;
    for (const ms of ABSURD) await expect(a.lease.ensureAtLeast(ms)).rejects.toBeInstanceOf(ValidationError);
    expect(a.lease.expiresAt).toBe(1_700_000_001_000);
    await expect(queue.claim("q", Infinity)).rejects.toBeInstanceOf(ValidationError);
    clock.advance(999);
    await settle();
    expect(await queue.view().stats("q")).toMatchObject({ claimed: 2 });
    clock.advance(1);
    await settle();
    await queue.flush();
    expect(await queue.view().stats("q")).toMatchObject({ pending: 2, claimed: 0 });
    await expect(queue.ack(b)).rejects.toBeInstanceOf(ClaimLostError);
    await queue.close();
  });

  it("enqueue refuses an absurd runAt and writes nothing", async () => {
    const { store } = await backend.make();
    const queue = await Queue.open(store, "q", { flushIntervalMs: 0, clock: new MockClock(1_700_000_000_000) });
    for (const runAt of [Number.NaN, Infinity, -1, 1e30]) {
      await expect(queue.enqueue("q", enc("x"), { runAt })).rejects.toBeInstanceOf(ValidationError);
    }
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, scheduled: 0 });
    await queue.close();
  });
});
