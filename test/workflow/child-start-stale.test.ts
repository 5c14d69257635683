/**
 * @module A child start by a step delivery that outlived its lease: the
 * step was delivered again and that delivery ended the run. The stale
 * delivery's start must leave nothing behind: no child running on after
 * its parent's end (a `cancel` child would never be cancelled) and no
 * entry in the parent's child list that no sweep will read again. The
 * lease runs out on the MockClock; the step queue's reaper redelivers.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, type ChildRunStart, type EnqueueOptions, type ParentClosePolicy, type RunOptions, StepOutcome } from "taquba";
import { childrenPrefix, signalBufferKey } from "../../runtime/workflow/records/kv-keys.js";
import { HEADER_RUN_ID } from "../../runtime/workflow/records/reserved.js";
import { dec, enc, type Env, openEnv, runnerOf, until } from "./helpers.js";

const CHILD = "p-s0-c";
const STEPS = "workflow-steps";

/** A promise and the function that resolves it. */
function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** What a start settled with: its result, or the error it was refused with. */
type Landed = ChildRunStart | Error;

/** The run's records and the child's after the stale start settled: nothing of the child may be left. */
async function expectNoChild(env: Env): Promise<void> {
  expect(await env.runtime.status(CHILD)).toBeNull();
  expect((await env.runtime.listRuns()).runs.map((r) => String(r.runId))).toEqual(["p"]);
  expect((await env.queue.kvScan(childrenPrefix(STEPS, "p"))).entries).toEqual([]);
  expect((await env.queue.kvScan(signalBufferKey(STEPS, "workflow.child/p/"))).entries).toEqual([]);
}

/**
 * Opens a runtime whose parent run `p` is ended by the second delivery of its step 0 (with `second: "wait"`,
 * moved on to step 1, which waits for a signal never sent); the first delivery runs `first`.
 */
async function openWithStaleFirst(
  first: (start: (policy: ParentClosePolicy, options?: RunOptions) => Promise<Landed>) => Promise<void>,
  second: "fail" | "wait" = "fail",
) {
  let deliveries = 0;
  const stale: { landed?: Promise<Landed> } = {};
  const runner = runnerOf(async (s) => {
    if (dec(s.payload) === "child") return StepOutcome.continueOnSignal(enc("waiting"), "never-sent", 3_600_000);
    deliveries++;
    if (s.stepNumber > 0) return StepOutcome.continueOnSignal(enc("waiting"), "never-sent", 3_600_000);
    if (s.attempt > 1) {
      return second === "fail" ? StepOutcome.fail("the second delivery gives up") : StepOutcome.continueOnSignal(enc("next"), "never-sent", 3_600_000);
    }
    await first((parentClose, options) => {
      const landed = s.children.start({ input: enc("child"), key: "c", parentClose, ...(options === undefined ? {} : { options }) }).then(
        (v): Landed => v,
        (e: unknown): Landed => e as Error,
      );
      stale.landed = landed;
      return landed;
    });
    return StepOutcome.succeed(enc("the stale delivery's result"));
  });
  const env = await openEnv(runner, { queueOptions: { queueConfigs: { [STEPS]: { leaseMs: 1_000, maxAttempts: 3 } } } });
  return { env, stale, deliveries: () => deliveries };
}

describe("a child start by a step delivery whose lease ran out while another delivery ended the run", () => {
  for (const parentClose of ["cancel", "abandon"] as const) {
    it(`started after the run's end, it is refused and starts no ${parentClose} child`, async () => {
      const gate = latch();
      const { env, stale, deliveries } = await openWithStaleFirst(async (start) => {
        await gate.promise;
        await start(parentClose);
      });
      try {
        await env.runtime.submit({ runId: "p", input: enc("parent") });
        await until(() => deliveries() === 1, "the first delivery");
        env.clock.advance(10_000);
        const end = await env.runtime.wait("p");
        expect(end.termination.status).toBe("failed");
        gate.open();
        await until(() => stale.landed !== undefined, "the stale delivery's start");
        const landed = await stale.landed!;
        expect(landed).toBeInstanceOf(ClaimLostError);
        expect((landed as Error).message).toMatch(/step 0 of run "p" was settled by another delivery or the run ended/);
        await expectNoChild(env);
        // The stale delivery's own settlement is refused: the failed end stands.
        expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      } finally {
        await env.stop();
      }
    });
  }

  it("started after another delivery moved the run on to its next step, it is refused and starts no child", async () => {
    const gate = latch();
    const { env, stale, deliveries } = await openWithStaleFirst(async (start) => {
      await gate.promise;
      await start("cancel");
    }, "wait");
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(() => deliveries() === 1, "the first delivery");
      env.clock.advance(10_000);
      await until(async () => (await env.runtime.status("p"))?.step === 1, "the run at step 1");
      gate.open();
      await until(() => stale.landed !== undefined, "the stale delivery's start");
      expect(await stale.landed!).toBeInstanceOf(ClaimLostError);
      // The child would be no step's: step 0 was settled without it, and the run goes on.
      expect(await env.runtime.status(CHILD)).toBeNull();
      expect((await env.queue.kvScan(childrenPrefix(STEPS, "p"))).entries).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("started while its step was current but landing after the run's end, the guarded commit refuses it", async () => {
    const held = latch();
    const release = latch();
    const { env, stale, deliveries } = await openWithStaleFirst(async (start) => {
      await start("cancel");
    });
    // The child's submission, past every check made before its commit, is held until the run ended.
    const enqueueIfUnchanged = env.queue.enqueueIfUnchanged.bind(env.queue);
    env.queue.enqueueIfUnchanged = async (name: string, payload: Uint8Array, opts: EnqueueOptions, effects, unchanged) => {
      if (opts.headers?.[HEADER_RUN_ID] === CHILD) {
        held.open();
        await release.promise;
      }
      return enqueueIfUnchanged(name, payload, opts, effects, unchanged);
    };
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await held.promise;
      expect(deliveries()).toBe(1);
      env.clock.advance(10_000);
      const end = await env.runtime.wait("p");
      expect(end.termination.status).toBe("failed");
      release.open();
      const landed = await stale.landed!;
      expect(landed).toBeInstanceOf(ClaimLostError);
      await expectNoChild(env);
    } finally {
      release.open();
      await env.stop();
    }
  });
});

/** A run waiting in the open window of debounce key "k" (an hour long), which a debounced child start would supersede. */
const WINDOW = { debounce: { key: "k", periodMs: 3_600_000 } } satisfies RunOptions;

/** The run waiting in the window still waits there: no stale start superseded it. */
async function expectStillWaiting(env: Env, runId: string): Promise<void> {
  expect(await env.runtime.status(runId)).toMatchObject({ state: "pending", step: 0 });
  const holder = env.queue.debounceHolder(STEPS, "k");
  expect(holder?.headers[HEADER_RUN_ID]).toBe(runId);
  expect(await env.queue.view().job(holder!.jobId)).toMatchObject({ state: "scheduled", debounceKey: "k" });
}

describe("a debounced child start by a step delivery whose lease ran out while another delivery ended the run", () => {
  it("started after the run's end, it is refused, starts no child and supersedes nothing", async () => {
    const gate = latch();
    const { env, stale, deliveries } = await openWithStaleFirst(async (start) => {
      await gate.promise;
      await start("cancel", WINDOW);
    });
    try {
      await env.runtime.submit({ runId: "w", input: enc("child"), options: WINDOW });
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(() => deliveries() === 1, "the first delivery");
      env.clock.advance(10_000);
      expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      gate.open();
      await until(() => stale.landed !== undefined, "the stale delivery's start");
      expect(await stale.landed!).toBeInstanceOf(ClaimLostError);
      expect(await env.runtime.status(CHILD)).toBeNull();
      expect((await env.queue.kvScan(childrenPrefix(STEPS, "p"))).entries).toEqual([]);
      await expectStillWaiting(env, "w");
    } finally {
      gate.open();
      await env.stop();
    }
  });

  it("started while its step was current but landing after the run's end, the guarded supersession refuses it", async () => {
    const held = latch();
    const release = latch();
    const { env, stale, deliveries } = await openWithStaleFirst(async (start) => {
      await start("cancel", WINDOW);
    });
    // The child's submission, past every check made before its commit (the window read included), is held until the run ended.
    const enqueueSuperseding = env.queue.enqueueSuperseding.bind(env.queue);
    let commits = 0;
    env.queue.enqueueSuperseding = async (name, payload, opts, effects, expected, unchanged) => {
      if (opts.headers?.[HEADER_RUN_ID] === CHILD) {
        commits++;
        expect(expected.jobId).toBeDefined();
        held.open();
        await release.promise;
      }
      return enqueueSuperseding(name, payload, opts, effects, expected, unchanged);
    };
    try {
      await env.runtime.submit({ runId: "w", input: enc("child"), options: WINDOW });
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await held.promise;
      expect(deliveries()).toBe(1);
      env.clock.advance(10_000);
      expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      release.open();
      expect(await stale.landed!).toBeInstanceOf(ClaimLostError);
      // Refused in the commit, then by the step pointer read again: one commit tried.
      expect(commits).toBe(1);
      expect(await env.runtime.status(CHILD)).toBeNull();
      expect((await env.queue.kvScan(childrenPrefix(STEPS, "p"))).entries).toEqual([]);
      expect((await env.queue.kvScan(signalBufferKey(STEPS, "workflow.child/p/"))).entries).toEqual([]);
      await expectStillWaiting(env, "w");
    } finally {
      release.open();
      await env.stop();
    }
  });
});
