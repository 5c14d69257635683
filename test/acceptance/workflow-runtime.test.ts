/**
 * Acceptance: the "Workflow runtime" section of the public API contract.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  Delivery,
  EffectsHandle,
  InputMismatchError,
  InvalidRunIdError,
  MAX_KV_VALUE_SIZE,
  MAX_RUN_ID_LEN,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  RESERVED_KV_PREFIX,
  ReservedHeaderError,
  RunId,
  RunNotFoundError,
  SettlementEffects,
  Step,
  StepError,
  StepOutcome,
  TaqubaError,
  Trigger,
  WebhookTerminalHook,
  WorkflowRuntime,
  WorkflowView,
  type KvReadHandle,
  type LeaseHandle,
  type Memo,
  type RunEnd,
  type RunOptions,
  type RunOutcome,
  type RunSpec,
  type RunStatus,
  type StepRunner,
  type SubmitOutcome,
  type TerminalEffects,
  type TerminalHook,
} from "taquba";
import { dec, enc, until } from "./support.js";

const HOUR = 3_600_000;

interface Env {
  store: MemoryStore;
  clock: MockClock;
  queue: Queue;
  runtime: WorkflowRuntime;
  stop(): Promise<void>;
}

/** The quick start: a queue and a runtime over one store, a worker spawned. */
async function start(runner: StepRunner, hook: TerminalHook = NoopTerminalHook, spawn = true): Promise<Env> {
  const store = new MemoryStore();
  const clock = new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "wf", { clock, flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, runner, hook).clock(clock).build();
  const handle = spawn ? runtime.spawn() : undefined;
  return {
    store,
    clock,
    queue,
    runtime,
    async stop() {
      await handle?.shutdown();
      await queue.close();
    },
  };
}

const runner = (fn: StepRunner["runStep"]): StepRunner => ({ runStep: fn });

describe("StepOutcome and Trigger", () => {
  it("are tagged unions built by the documented constructors", () => {
    const p = enc("p");
    expect(StepOutcome.continueNow(p)).toEqual({ kind: "continue", payload: p, when: { kind: "immediate" } });
    expect(StepOutcome.continueAfter(p, 500)).toEqual({ kind: "continue", payload: p, when: Trigger.after(500) });
    expect(StepOutcome.continueOnSignal(p, "key", 1_000)).toEqual({ kind: "continue", payload: p, when: Trigger.onSignal("key", 1_000) });
    expect(StepOutcome.succeed(p)).toEqual({ kind: "succeed", result: p });
    expect(StepOutcome.fail("why")).toEqual({ kind: "fail", reason: "why" });
    expect(StepOutcome.cancel("stop")).toEqual({ kind: "cancel", reason: "stop" });
    expect(Trigger.immediate()).toEqual({ kind: "immediate" });
    expect(Trigger.after(5).kind).toBe("after");
    expect(Trigger.onSignal("k", 5)).toMatchObject({ kind: "onSignal", correlationKey: "k" });
    expectTypeOf<StepOutcome["kind"]>().toEqualTypeOf<"continue" | "succeed" | "fail" | "cancel">();
    expectTypeOf<Extract<StepOutcome, { kind: "continue" }>>().toHaveProperty("when").toEqualTypeOf<Trigger>();
    expectTypeOf<Extract<StepOutcome, { kind: "succeed" }>>().toHaveProperty("result").toEqualTypeOf<Uint8Array>();
  });

  it("StepError.transient(e) / StepError.permanent(e)", () => {
    expect(StepError.transient(new Error("503")).kind).toBe("transient");
    expect(StepError.permanent("bad input").kind).toBe("permanent");
    expect(StepError.permanent("x")).toBeInstanceOf(TaqubaError);
  });
});

describe("Delivery, Step, Memo, EffectsHandle, KvReadHandle", () => {
  it("have the documented fields and types", () => {
    expectTypeOf<Delivery>().toHaveProperty("runId").toEqualTypeOf<RunId>();
    expectTypeOf<Delivery>().toHaveProperty("headers").toMatchTypeOf<Record<string, string>>();
    expectTypeOf<Delivery>().toHaveProperty("jobId").toEqualTypeOf<string>();
    expectTypeOf<Delivery>().toHaveProperty("attempt").toEqualTypeOf<number>();
    expectTypeOf<Delivery>().toHaveProperty("maxAttempts").toEqualTypeOf<number>();
    expectTypeOf<Delivery["isLastAttempt"]>().toEqualTypeOf<() => boolean>();
    expectTypeOf<Delivery>().toHaveProperty("cancelSignal").toEqualTypeOf<AbortSignal>();
    expectTypeOf<Delivery>().toHaveProperty("lease").toEqualTypeOf<LeaseHandle>();
    expectTypeOf<Delivery>().toHaveProperty("memo").toEqualTypeOf<Memo>();
    expectTypeOf<Delivery>().toHaveProperty("runMemo").toEqualTypeOf<Memo>();
    expectTypeOf<Delivery>().toHaveProperty("effects").toEqualTypeOf<EffectsHandle>();
    expectTypeOf<Delivery>().toHaveProperty("kv").toEqualTypeOf<KvReadHandle>();
    expectTypeOf<Step>().toMatchTypeOf<Delivery>();
    expectTypeOf<Step>().toHaveProperty("stepNumber").toEqualTypeOf<number>();
    expectTypeOf<Step>().toHaveProperty("payload").toEqualTypeOf<Uint8Array>();
    expectTypeOf<Step>().toHaveProperty("signal").toEqualTypeOf<Uint8Array | null | undefined>();
    expectTypeOf<StepRunner["runStep"]>().toEqualTypeOf<(step: Step) => Promise<StepOutcome>>();
    expectTypeOf<KvReadHandle["get"]>().toEqualTypeOf<(key: string) => Promise<Uint8Array | null>>();
  });

  it("Step.detached(payload, opts?) and Delivery.detached(opts?) unit-test a runner with no queue", async () => {
    const doubler = runner(async (s) => StepOutcome.succeed(enc(dec(s.payload).repeat(2))));
    const step = Step.detached(enc("ab"));
    expect(step.stepNumber).toBe(0);
    expect(step.signal).toBeUndefined();
    expect(step.attempt).toBe(1);
    expect(step.cancelSignal.aborted).toBe(false);
    expect(await doubler.runStep(step)).toEqual(StepOutcome.succeed(enc("abab")));
    await step.lease.ensureAtLeast(1_000);

    const signalled = Step.detached(enc("x"), { stepNumber: 3, signal: enc("sig"), headers: { h: "v" }, attempt: 3, maxAttempts: 3, kv: { k: enc("v") } });
    expect(signalled.stepNumber).toBe(3);
    expect(dec(signalled.signal)).toBe("sig");
    expect(signalled.headers).toEqual({ h: "v" });
    expect(signalled.isLastAttempt()).toBe(true);
    expect(dec(await signalled.kv.get("k"))).toBe("v");
    expect(await signalled.kv.get("missing")).toBeNull();
    expect(Step.detached(enc("x"), { signal: null }).signal).toBeNull();

    const d = Delivery.detached({ runId: "run-1" });
    expect(d.runId).toBe("run-1");
    expect(d.isLastAttempt()).toBe(false);
  });

  it("Memo: get/put, memoized (MessagePack, named fields), memoizedByContent, contentKey/contentGet/contentPut", async () => {
    const store = new MemoryStore();
    const step = Step.detached(enc("x"), { store, runId: "memo-run" });
    const memo = step.memo;
    expect(await memo.get("k")).toBeNull();
    await memo.put("k", enc("v"));
    expect(dec(await memo.get("k"))).toBe("v");

    let computed = 0;
    const compute = async () => (computed++, { name: "ada", n: 1 });
    expect(await memo.memoized("obj", compute)).toEqual({ name: "ada", n: 1 });
    expect(await memo.memoized("obj", compute)).toEqual({ name: "ada", n: 1 });
    expect(computed).toBe(1);

    expect(await memo.memoizedByContent({ op: "sum", a: 1 }, async () => 42)).toBe(42);
    expect(await memo.memoizedByContent({ op: "sum", a: 1 }, async () => 0)).toBe(42);
    const key = memo.contentKey({ op: "x" });
    expect(typeof key).toBe("string");
    expect(memo.contentKey({ op: "x" })).toBe(key);
    expect(memo.contentKey({ op: "y" })).not.toBe(key);
    expect(await memo.contentGet({ op: "x" })).toBeNull();
    await memo.contentPut({ op: "x" }, enc("cached"));
    expect(dec(await memo.contentGet({ op: "x" }))).toBe("cached");

    // A later delivery of the same run and step over the same store sees the memo; runMemo is shared by steps.
    const again = Step.detached(enc("x"), { store, runId: "memo-run" });
    expect(dec(await again.memo.get("k"))).toBe("v");
    await again.runMemo.put("shared", enc("1"));
    expect(dec(await Step.detached(enc("x"), { store, runId: "memo-run", stepNumber: 7 }).runMemo.get("shared"))).toBe("1");
    expect(await Step.detached(enc("x"), { store, runId: "memo-run", stepNumber: 7 }).memo.get("k")).toBeNull();
  });

  it("EffectsHandle put/delete throw on the reserved prefix, an oversized value, and put+delete of one key", () => {
    const fx = Step.detached(enc("x")).effects;
    fx.put("app/a", enc("1"));
    fx.delete("app/b");
    expect(() => fx.put(`${RESERVED_KV_PREFIX}x`, enc("1"))).toThrow(TaqubaError);
    expect(() => fx.delete(`${RESERVED_KV_PREFIX}x`)).toThrow(TaqubaError);
    expect(() => fx.put("big", new Uint8Array(MAX_KV_VALUE_SIZE + 1))).toThrow(TaqubaError);
    expect(() => fx.delete("app/a")).toThrow(TaqubaError);
    expect(() => fx.put("app/b", enc("1"))).toThrow(TaqubaError);
  });
});

describe("the runtime: quick start", () => {
  it("builder chain with every documented option, then submit → run → wait → outcome", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "quick", { clock, flushIntervalMs: 1 });
    const counter = runner(async (s) => {
      const n = Number(dec(s.payload));
      s.effects.put(`app/progress/${s.runId}`, enc(String(n)));
      return n < 3 ? StepOutcome.continueNow(enc(String(n + 1))) : StepOutcome.succeed(enc(`done at ${s.stepNumber}`));
    });
    const runtime: WorkflowRuntime = WorkflowRuntime.builder(queue, store, counter, NoopTerminalHook)
      .queueName("steps")
      .memoPrefix("steps-memo")
      .maxConcurrentSteps(4)
      .pollIntervalMs(100)
      .stepOutputReplay(true)
      .memoRetention(24 * HOUR)
      .groupRetention(24 * HOUR)
      .clock(clock)
      .build();
    const shutdown = new AbortController();
    const running = runtime.run(shutdown.signal);

    const spec: RunSpec = { input: enc("0"), runId: "count-1", options: { headers: { tenant: "acme" } } };
    const submitted: SubmitOutcome = await runtime.submit(spec);
    expect(submitted).toEqual({ runId: "count-1", jobId: expect.any(String), newlySubmitted: true });
    const end: RunEnd = await runtime.wait(submitted.runId);
    expect(end.termination).toMatchObject({ runId: "count-1", status: "succeeded", finalStep: 3 });
    const outcome = await runtime.outcome("count-1");
    expect(outcome).toMatchObject({ runId: "count-1", status: "succeeded", headers: { tenant: "acme" }, finalStep: 3 });
    expect(dec(outcome!.result)).toBe("done at 3");
    expect(await runtime.status("count-1")).toMatchObject({ state: "terminated", step: 3 });
    expect(dec(await queue.kvGet("app/progress/count-1"))).toBe("3");
    expect(await queue.view().stats("steps")).toMatchObject({ done: 4 });

    shutdown.abort();
    await running;
    await queue.close();
  });

  it("run(shutdown) also takes a Promise; spawn(shutdown?) returns a handle whose shutdown() resolves once stopped", async () => {
    const env = await start(
      runner(async (s) => StepOutcome.succeed(s.payload)),
      NoopTerminalHook,
      false,
    );
    let stop!: () => void;
    const running = env.runtime.run(new Promise<void>((r) => (stop = r)));
    await env.runtime.submit({ input: enc("a"), runId: "a" });
    await env.runtime.wait("a");
    stop();
    await running;

    const ac = new AbortController();
    const handle = env.runtime.spawn(ac.signal);
    await env.runtime.submit({ input: enc("b"), runId: "b" });
    await env.runtime.wait("b");
    await handle.shutdown();
    await env.queue.close();
  });

  it("RunStatus states and RunOutcome statuses have the documented literals", () => {
    expectTypeOf<RunStatus["state"]>().toEqualTypeOf<"pending" | "running" | "cancelling" | "terminated">();
    expectTypeOf<RunStatus>().toHaveProperty("step").toEqualTypeOf<number>();
    expectTypeOf<RunOutcome["status"]>().toEqualTypeOf<"succeeded" | "failed" | "cancelled">();
    expectTypeOf<RunOutcome>().toHaveProperty("runId").toEqualTypeOf<RunId>();
    expectTypeOf<RunOutcome>().toHaveProperty("result").toEqualTypeOf<Uint8Array | undefined>();
    expectTypeOf<RunOutcome>().toHaveProperty("error").toEqualTypeOf<string | undefined>();
    expectTypeOf<RunOutcome>().toHaveProperty("finalStep").toEqualTypeOf<number>();
    expectTypeOf<RunOutcome>().toHaveProperty("headers").toMatchTypeOf<Record<string, string>>();
    expectTypeOf<RunSpec>().toHaveProperty("input").toEqualTypeOf<Uint8Array>();
    expectTypeOf<RunSpec>().toHaveProperty("runId").toEqualTypeOf<RunId | string | undefined>();
    expectTypeOf<RunSpec>().toHaveProperty("options").toEqualTypeOf<RunOptions | undefined>();
    expectTypeOf<RunSpec>().toHaveProperty("effects").toEqualTypeOf<SettlementEffects | undefined>();
    expectTypeOf<RunOptions>().toHaveProperty("priority").toEqualTypeOf<number | undefined>();
    expectTypeOf<RunOptions>().toHaveProperty("maxAttemptsPerStep").toEqualTypeOf<number | undefined>();
    expectTypeOf<RunOptions>().toHaveProperty("runAt").toEqualTypeOf<number | undefined>();
    expectTypeOf<SubmitOutcome>().toEqualTypeOf<{ readonly runId: RunId; readonly jobId: string; readonly newlySubmitted: boolean }>();
    expectTypeOf<WorkflowRuntime["signal"]>().returns.toEqualTypeOf<Promise<"delivered" | "buffered">>();
    expectTypeOf<WorkflowRuntime["cancel"]>().returns.toEqualTypeOf<Promise<boolean>>();
    expectTypeOf<WorkflowRuntime["clearSignal"]>().returns.toEqualTypeOf<Promise<boolean>>();
    expectTypeOf<WorkflowRuntime["waitTimeout"]>().returns.toEqualTypeOf<Promise<RunEnd | null>>();
  });

  it("status goes pending → running → terminated; outcome is null until the end", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const env = await start(
      runner(async (s) => (await gate, StepOutcome.succeed(s.payload))),
      NoopTerminalHook,
      false,
    );
    await env.runtime.submit({ input: enc("x"), runId: "s1" });
    expect(await env.runtime.status("s1")).toMatchObject({ runId: "s1", state: "pending", step: 0 });
    expect(await env.runtime.outcome("s1")).toBeNull();
    const handle = env.runtime.spawn();
    await until(async () => (await env.runtime.status("s1"))?.state === "running", "running");
    release();
    await env.runtime.wait("s1");
    expect(await env.runtime.status("s1")).toMatchObject({ state: "terminated" });
    expect(await env.runtime.status("never")).toBeNull();
    expect(await env.runtime.outcome("never")).toBeNull();
    await expect(env.runtime.wait("never")).rejects.toBeInstanceOf(RunNotFoundError);
    await handle.shutdown();
    await env.queue.close();
  });

  it("fail, cancel verdicts and a permanent StepError end the run with the documented status", async () => {
    const env = await start(
      runner(async (s) => {
        const what = dec(s.payload);
        if (what === "fail") return StepOutcome.fail("no");
        if (what === "cancel") return StepOutcome.cancel("enough");
        throw StepError.permanent(new Error("broken"));
      }),
    );
    await env.runtime.submit({ input: enc("fail"), runId: "f" });
    await env.runtime.submit({ input: enc("cancel"), runId: "c" });
    await env.runtime.submit({ input: enc("boom"), runId: "p" });
    expect((await env.runtime.wait("f")).outcome).toMatchObject({ status: "failed", error: "no" });
    expect((await env.runtime.wait("c")).outcome).toMatchObject({ status: "cancelled", error: "enough" });
    const p = await env.runtime.wait("p");
    expect(p.termination.status).toBe("failed");
    expect(p.termination.error).toContain("broken");
    await env.stop();
  });

  it("a transient StepError is retried; isLastAttempt() is true on the last attempt", async () => {
    const attempts: Array<[number, boolean]> = [];
    const env = await start(
      runner(async (s) => {
        attempts.push([s.attempt, s.isLastAttempt()]);
        if (s.attempt < 2) throw StepError.transient(new Error("503"));
        return StepOutcome.succeed(enc("ok"));
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "t", options: { maxAttemptsPerStep: 2 } });
    await until(() => attempts.length === 1, "first attempt");
    // The retry waits out the queue's backoff on the mock clock.
    await until(async () => {
      env.clock.advance(1_000);
      return attempts.length === 2;
    }, "the retry");
    expect((await env.runtime.wait("t")).termination.status).toBe("succeeded");
    expect(attempts).toEqual([
      [1, false],
      [2, true],
    ]);
    await env.stop();
  });
});

describe("durability", () => {
  it("a waiting run resumes in a new queue and runtime over the same store; status and outcome survive", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const twoSteps = runner(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(enc("second"), HOUR) : StepOutcome.succeed(s.payload)));
    const q1 = await Queue.open(store, "durable", { clock, flushIntervalMs: 1 });
    const r1 = WorkflowRuntime.builder(q1, store, twoSteps, NoopTerminalHook).build();
    const h1 = r1.spawn();
    await r1.submit({ input: enc("first"), runId: "d" });
    await until(async () => (await r1.status("d"))?.step === 1, "step 1 scheduled");
    await h1.shutdown();
    await q1.close();

    const q2 = await Queue.open(store, "durable", { clock, flushIntervalMs: 1 });
    const r2 = WorkflowRuntime.builder(q2, store, twoSteps, NoopTerminalHook).build();
    expect(await r2.status("d")).toMatchObject({ state: "pending", step: 1 });
    const h2 = r2.spawn();
    clock.advance(HOUR);
    expect(dec((await r2.wait("d")).outcome!.result)).toBe("second");
    await h2.shutdown();
    await q2.close();

    const q3 = await Queue.open(store, "durable", { clock, flushIntervalMs: 1 });
    const r3 = WorkflowRuntime.builder(q3, store, twoSteps, NoopTerminalHook).build();
    expect(await r3.outcome("d")).toMatchObject({ status: "succeeded", finalStep: 1 });
    await q3.close();
  });
});

describe("submit rules", () => {
  it("is idempotent on (runId, input); a different input is InputMismatchError", async () => {
    const env = await start(
      runner(async (s) => StepOutcome.continueAfter(s.payload, HOUR)),
      NoopTerminalHook,
      false,
    );
    const first = await env.runtime.submit({ input: enc("a"), runId: "dup" });
    const again = await env.runtime.submit({ input: enc("a"), runId: "dup" });
    expect(again).toEqual({ runId: "dup", jobId: first.jobId, newlySubmitted: false });
    await expect(env.runtime.submit({ input: enc("b"), runId: "dup" })).rejects.toBeInstanceOf(InputMismatchError);
    await env.stop();
  });

  it("rejects reserved headers (ReservedHeaderError) and bad run ids (InvalidRunIdError)", async () => {
    const env = await start(
      runner(async (s) => StepOutcome.succeed(s.payload)),
      NoopTerminalHook,
      false,
    );
    await expect(env.runtime.submit({ input: enc("a"), options: { headers: { "workflow.step": "1" } } })).rejects.toBeInstanceOf(ReservedHeaderError);
    await expect(env.runtime.submit({ input: enc("a"), runId: "has space" })).rejects.toBeInstanceOf(InvalidRunIdError);
    expect(await env.queue.view().stats("workflow-steps")).toMatchObject({ pending: 0 });
    await env.stop();
  });

  it("RunSpec.effects commit with the step-0 enqueue; RunOptions.runAt delays the first step", async () => {
    const env = await start(runner(async (s) => StepOutcome.succeed(s.payload)));
    await env.runtime.submit({
      input: enc("later"),
      runId: "later",
      options: { runAt: env.clock.now() + HOUR, priority: 1 },
      effects: new SettlementEffects().kvPut("app/submitted/later", enc("1")),
    });
    expect(dec(await env.queue.kvGet("app/submitted/later"))).toBe("1");
    expect(await env.runtime.status("later")).toMatchObject({ state: "pending", step: 0 });
    env.clock.advance(HOUR);
    expect((await env.runtime.wait("later")).termination.status).toBe("succeeded");
    await env.stop();
  });
});

describe("signals", () => {
  const approval = runner(async (s) =>
    s.stepNumber === 0
      ? StepOutcome.continueOnSignal(s.payload, dec(s.payload), HOUR)
      : StepOutcome.succeed(s.signal == null ? enc(`timeout:${String(s.signal)}`) : s.signal),
  );

  it("signal(key, payload) is 'delivered' to a waiting step", async () => {
    const env = await start(approval);
    await env.runtime.submit({ input: enc("pay:1"), runId: "w" });
    await until(async () => (await env.runtime.status("w"))?.step === 1, "waiting on the signal");
    expect(await env.runtime.signal("pay:1", enc("paid"))).toBe("delivered");
    expect(dec((await env.runtime.wait("w")).outcome!.result)).toBe("paid");
    await env.stop();
  });

  it("signal with no waiter is 'buffered' for the next one; clearSignal discards a buffered signal", async () => {
    const env = await start(approval);
    expect(await env.runtime.signal("pay:2", enc("early"))).toBe("buffered");
    await env.runtime.submit({ input: enc("pay:2"), runId: "b" });
    expect(dec((await env.runtime.wait("b")).outcome!.result)).toBe("early");
    expect(await env.runtime.signal("pay:3", enc("x"))).toBe("buffered");
    expect(await env.runtime.clearSignal("pay:3")).toBe(true);
    expect(await env.runtime.clearSignal("pay:3")).toBe(false);
    await env.stop();
  });

  it("a signal wait that times out wakes the step with signal === null", async () => {
    const env = await start(approval);
    await env.runtime.submit({ input: enc("pay:4"), runId: "t" });
    await until(async () => (await env.runtime.status("t"))?.step === 1, "waiting on the signal");
    const waiting = env.runtime.waitTimeout("t", 2 * HOUR);
    env.clock.advance(HOUR);
    const end = await waiting;
    expect(dec(end!.outcome!.result)).toBe("timeout:null");
    await env.stop();
  });
});

describe("waitTimeout and cancel", () => {
  it("waitTimeout(runId, ms) is null when the run is still active after ms on the runtime's clock", async () => {
    const env = await start(runner(async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, HOUR) : StepOutcome.succeed(s.payload))));
    await env.runtime.submit({ input: enc("x"), runId: "slow" });
    await until(async () => (await env.runtime.status("slow"))?.step === 1, "step 1 scheduled");
    const waited = env.runtime.waitTimeout("slow", 1_000);
    await until(() => env.clock.pendingTimers > 0, "the wait's timer");
    env.clock.advance(1_000);
    expect(await waited).toBeNull();
    await env.stop();
  });

  it("cancel(runId) ends a waiting run as cancelled and aborts a running step's cancelSignal", async () => {
    let sawAbort = false;
    const env = await start(
      runner(async (s) => {
        if (dec(s.payload) === "wait") return StepOutcome.continueAfter(enc("never"), HOUR);
        if (dec(s.payload) === "busy") {
          await new Promise<void>((r) => s.cancelSignal.addEventListener("abort", () => r(), { once: true }));
          sawAbort = s.cancelSignal.aborted;
          return StepOutcome.cancel("saw the request");
        }
        return StepOutcome.succeed(s.payload);
      }),
    );
    await env.runtime.submit({ input: enc("wait"), runId: "idle" });
    await until(async () => (await env.runtime.status("idle"))?.step === 1, "idle waiting");
    expect(await env.runtime.cancel("idle")).toBe(true);
    expect((await env.runtime.wait("idle")).termination.status).toBe("cancelled");
    expect(await env.runtime.cancel("idle")).toBe(false);
    expect(await env.runtime.cancel("unknown")).toBe(false);

    await env.runtime.submit({ input: enc("busy"), runId: "busy" });
    await until(async () => (await env.runtime.status("busy"))?.state === "running", "busy running");
    expect(await env.runtime.cancel("busy")).toBe(true);
    expect((await env.runtime.wait("busy")).termination.status).toBe("cancelled");
    expect(sawAbort).toBe(true);
    await env.stop();
  });
});

describe("terminal hooks", () => {
  it("a TerminalHook's onTermination(outcome, effects) sees each observed outcome; observes() filters", async () => {
    const seen: RunOutcome[] = [];
    const hook: TerminalHook = {
      observes: (o) => o.status !== "cancelled",
      async onTermination(o: RunOutcome, fx: TerminalEffects) {
        seen.push(o);
        fx.put(`app/ended/${o.runId}`, enc(o.status));
      },
    };
    const env = await start(
      runner(async (s) => (dec(s.payload) === "c" ? StepOutcome.cancel("c") : StepOutcome.succeed(s.payload))),
      hook,
    );
    await env.runtime.submit({ input: enc("ok"), runId: "ok", options: { headers: { who: "me" } } });
    await env.runtime.submit({ input: enc("c"), runId: "c" });
    await env.runtime.wait("c");
    await until(async () => (await env.queue.kvGet("app/ended/ok")) !== null, "the hook's effects");
    expect(seen.map((o) => o.runId)).toEqual(["ok"]);
    expect(seen[0]).toMatchObject({ status: "succeeded", headers: { who: "me" }, finalStep: 0 });
    expect(await env.queue.kvGet("app/ended/c")).toBeNull();
    await env.stop();
  });

  it("WebhookTerminalHook stages a delivery for runs with a callback_url header only", async () => {
    const hook = new WebhookTerminalHook({ queueName: "callbacks" });
    const env = await start(
      runner(async (s) => StepOutcome.succeed(s.payload)),
      hook,
    );
    await env.runtime.submit({ input: enc("a"), runId: "with", options: { headers: { callback_url: "https://example.com/done" } } });
    await env.runtime.submit({ input: enc("b"), runId: "without" });
    await env.runtime.wait("with");
    await env.runtime.wait("without");
    await until(async () => (await env.queue.view().stats("callbacks")).pending === 1, "one callback delivery job");
    await until(async () => (await env.queue.view().stats("workflow-steps")).done === 3, "the notification settled");
    expect((await env.queue.view().stats("callbacks")).pending).toBe(1);
    await env.stop();
  });
});

describe("ids, constants, errors, view", () => {
  it("RunId.parse / RunId.generate, MAX_RUN_ID_LEN, RESERVED_KV_PREFIX", () => {
    expect(RESERVED_KV_PREFIX).toBe("workflow/");
    expect(MAX_RUN_ID_LEN).toBe(128);
    const id = RunId.generate();
    expect(RunId.parse(id)).toBe(id);
    expect(RunId.generate()).not.toBe(id);
    expect(RunId.parse("a".repeat(MAX_RUN_ID_LEN))).toHaveLength(MAX_RUN_ID_LEN);
    expect(() => RunId.parse("a".repeat(MAX_RUN_ID_LEN + 1))).toThrow(InvalidRunIdError);
    expect(() => RunId.parse("")).toThrow(InvalidRunIdError);
    expectTypeOf(RunId.parse("x")).toEqualTypeOf<RunId>();
  });

  it("the workflow errors are TaqubaErrors", () => {
    for (const E of [InputMismatchError, RunNotFoundError, InvalidRunIdError, ReservedHeaderError]) {
      expect(Object.prototype.isPrototypeOf.call(TaqubaError.prototype, E.prototype)).toBe(true);
    }
    expect(new RunNotFoundError("r")).toBeInstanceOf(TaqubaError);
  });

  it("view() returns a WorkflowView answering status and outcome", async () => {
    const env = await start(runner(async (s) => StepOutcome.succeed(s.payload)));
    await env.runtime.submit({ input: enc("v"), runId: "v" });
    await env.runtime.wait("v");
    const view = env.runtime.view();
    expect(view).toBeInstanceOf(WorkflowView);
    expect(await view.status("v")).toMatchObject({ state: "terminated", status: "succeeded" });
    expect(dec((await view.outcome("v"))!.result)).toBe("v");
    await env.stop();
  });
});
