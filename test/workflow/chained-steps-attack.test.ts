/**
 * @module The chained step path (a continuing step's ack claims the run's
 * next step, awaited in `processStep` and handed on by `handOffNext`)
 * attacked: runners that throw in their own call or return a rejected
 * thenable, store faults at random during chained settlements with
 * offloaded payloads, with telemetry on and off. Every run ends with its
 * right result, nothing is rejected unhandled, nothing hangs.
 */
import { metrics } from "@opentelemetry/api";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, StoreRequestError, WorkflowRuntime, withFaults, type ObjectStore, type Step } from "taquba";
import { advanceUntil, dec, enc, holdableStore, openEnv, runIndexBackfilled, runnerOf, until } from "./helpers.js";

const STEPS = 5;

afterEach(() => {
  metrics.disable();
});

/** Turns the metrics on (a step is then processed under its attempt telemetry) or leaves them off. */
function telemetry(on: boolean): void {
  if (on) metrics.setGlobalMeterProvider(new MeterProvider());
  else metrics.disable();
}

const continueOrSucceed = (s: Step, payload: Uint8Array) =>
  s.stepNumber + 1 < STEPS ? StepOutcome.continueNow(payload) : StepOutcome.succeed(enc(`done ${s.stepNumber}`));

describe("the chained step path under attack", () => {
  for (const on of [false, true]) {
    it(`a chained step whose runner throws in its own call or returns a rejected thenable is retried; telemetry ${on ? "on" : "off"}`, async () => {
      telemetry(on);
      for (const how of ["throws", "thenable"] as const) {
        const calls: string[] = [];
        // Not async: a throw leaves the runner's own call, before any promise.
        const runner = runnerOf((s) => {
          calls.push(`${s.stepNumber}/${s.attempt}`);
          if (s.stepNumber === 2 && s.attempt === 1) {
            if (how === "throws") throw new Error("the runner threw in its call");
            // biome-ignore lint/suspicious/noThenProperty: a rejected thenable on purpose
            return { then: (_ok: unknown, fail: (e: unknown) => void) => fail(new Error("a rejected thenable")) } as unknown as Promise<StepOutcome>;
          }
          return Promise.resolve(continueOrSucceed(s, enc(String(s.stepNumber))));
        });
        const env = await openEnv(runner);
        await runIndexBackfilled(env.queue);
        const { runId } = await env.runtime.submit({ input: enc("") });
        // The failed attempt is retried after its backoff: the clock moves only once it is scheduled, nothing else in flight.
        await until(async () => (await env.queue.view().stats("workflow-steps")).scheduled === 1, "the failed step scheduled again");
        expect(calls).toEqual(["0/1", "1/1", "2/1"]);
        env.clock.advance(60_000);
        await env.runtime.wait(runId);
        expect(dec((await env.runtime.outcome(runId))!.result)).toBe(`done ${STEPS - 1}`);
        // Every step once, the failing one twice: its first attempt counted, nothing else run again.
        expect(calls).toEqual(["0/1", "1/1", "2/1", "2/2", "3/1", "4/1"]);
        await env.stop();
      }
    });

    it(`store faults at random during chained settlements with offloaded payloads: every run ends right; telemetry ${on ? "on" : "off"}`, {
      timeout: 60_000,
    }, async () => {
      telemetry(on);
      const store = withFaults(new MemoryStore(), { failureRate: 0, seed: on ? 7 : 3 });
      const ran = new Map<string, number>();
      const runner = runnerOf(async (s) => {
        ran.set(`${s.runId}/${s.stepNumber}`, (ran.get(`${s.runId}/${s.stepNumber}`) ?? 0) + 1);
        // Each step adds its number to what it was handed; every other one pads it past the offload threshold.
        const acc = `${dec(s.payload).replace(/y+$/, "")}${s.stepNumber}`;
        if (s.stepNumber + 1 === STEPS) return StepOutcome.succeed(enc(acc));
        return StepOutcome.continueNow(enc(`${acc};${s.stepNumber % 2 === 0 ? "y".repeat(200) : ""}`));
      });
      // Two slots: a reservation a failed chained ack kept would soon leave the worker none.
      const env = await openEnv(runner, { store, queueOptions: { payloadOffloadBytes: 64 }, configure: (b) => b.maxConcurrentSteps(2) });
      await runIndexBackfilled(env.queue);
      store.failureRate = 0.05;
      const runs: string[] = [];
      for (let i = 0; i < 8; i++) {
        for (;;) {
          try {
            runs.push((await env.runtime.submit({ input: enc(`input ${i}`) })).runId);
            break;
          } catch {
            // A submission the store refused: the caller sends it again.
          }
        }
      }
      await advanceUntil(
        env.clock,
        env.clock.now() + 3_600_000,
        async () => {
          for (const r of runs) if ((await env.runtime.outcome(r).catch(() => null)) === null) return false;
          return true;
        },
        "every run's end",
      );
      store.failureRate = 0;
      for (const [i, r] of runs.entries()) expect(dec((await env.runtime.outcome(r))!.result)).toBe(`input ${i}0;1;2;3;4`);
      expect(store.injected).toBeGreaterThan(0);
      for (const r of runs) for (let k = 0; k < STEPS; k++) expect(ran.get(`${r}/${k}`) ?? 0).toBeGreaterThan(0);
      await env.stop();
    });
  }

  it("the queue closed while a chained settlement waits for its WAL object: the worker ends, and a reopen finishes the run, each step once", async () => {
    const store = holdableStore();
    const calls: number[] = [];
    const runner = runnerOf(async (s) => {
      calls.push(s.stepNumber);
      if (s.stepNumber === 1) store.hold();
      return continueOrSucceed(s, enc(String(s.stepNumber)));
    });
    const env = await openEnv(runner, { store });
    const { runId } = await env.runtime.submit({ input: enc("") });
    await until(() => store.held > 0, "step 1's settlement written");
    // Closed under the worker, the settlement still in flight: then its WAL object lands.
    const closing = env.queue.close();
    store.release();
    await closing;
    await env.worker!.shutdown();
    expect(calls).toEqual([0, 1]);
    // Whatever the close made durable, the reopened queue finishes the run without running a step that settled.
    const queue = await Queue.open(store.inner, "wf", { flushIntervalMs: 1 });
    const runtime = WorkflowRuntime.builder(queue, store.inner, runner, NoopTerminalHook)
      .logger({ error: () => undefined })
      .build();
    const worker = runtime.spawn();
    await runtime.wait(runId);
    expect(dec((await runtime.outcome(runId))!.result)).toBe(`done ${STEPS - 1}`);
    expect(calls).toEqual([0, 1, 2, 3, 4]);
    await worker.shutdown();
    await queue.close();
  });

  // A first attempt's ack is awaited in `processStep`; a retried attempt's (its history reads the earlier ones first) in `settledContinue`.
  for (const retried of [false, true]) {
    it(`a chained ack whose commit fails (a WAL put that fails for good poisons the engine) gives its reservation back: the worker ends with the queue, and a reopen finishes the run; ${retried ? "a retried" : "a first"} attempt`, async () => {
      // WAL puts refused for good once poisoned: the engine fails and every commit not yet durable rejects.
      const inner = new MemoryStore();
      let poisoned = false;
      const store: ObjectStore = {
        get: (k) => inner.get(k),
        delete: (k) => inner.delete(k),
        list: (p, o) => inner.list(p, o),
        async put(k, b, o) {
          if (poisoned && k.includes("/wal/")) throw new StoreRequestError("put", k, "the credentials were revoked");
          return inner.put(k, b, o);
        },
      };
      const calls: number[] = [];
      let reopened = false;
      const runner = runnerOf(async (s) => {
        calls.push(s.stepNumber);
        // Step 1's chained ack (it reserves the worker's one slot for step 2) is the commit the failure rejects.
        if (s.stepNumber === 1 && !reopened && retried && s.attempt === 1) throw new Error("a transient failure");
        if (s.stepNumber === 1 && !reopened) poisoned = true;
        return continueOrSucceed(s, enc(String(s.stepNumber)));
      });
      // One slot: a reservation the failed ack kept would leave the worker waiting for a slot forever, past the queue's end.
      const queueLog: unknown[] = [];
      const logger = { error: (o: unknown) => queueLog.push(o), warn: () => undefined, info: () => undefined, debug: () => undefined };
      const env = await openEnv(runner, { store, queueOptions: { logger }, configure: (b) => b.maxConcurrentSteps(1) });
      let ended = false;
      void env.worker!.done.then(() => (ended = true));
      const { runId } = await env.runtime.submit({ input: enc("") });
      if (retried) {
        await until(async () => (await env.queue.view().stats("workflow-steps")).scheduled === 1, "the failed step scheduled again");
        env.clock.advance(60_000);
      }
      await until(() => env.queue.closed, "the engine poisoned");
      // The worker sees the queue closed and ends without being told to stop.
      await until(() => ended, "the worker ended after the failed chained ack");
      const before = retried ? [0, 1, 1] : [0, 1];
      expect(calls).toEqual(before);
      expect(env.queue.closedReason?.message).toContain("the credentials were revoked");
      await env.queue.close().catch(() => undefined);
      // Step 1's ack never became durable: a reopen runs step 1 again (its claim was never settled) and every later step once.
      reopened = true;
      const queue = await Queue.open(inner, "wf", { flushIntervalMs: 1 });
      const runtime = WorkflowRuntime.builder(queue, inner, runner, NoopTerminalHook)
        .logger({ error: () => undefined })
        .build();
      const worker = runtime.spawn();
      await runtime.wait(runId);
      expect(dec((await runtime.outcome(runId))!.result)).toBe(`done ${STEPS - 1}`);
      expect(calls).toEqual([...before, 1, 2, 3, 4]);
      await worker.shutdown();
      await queue.close();
    });
  }
});
