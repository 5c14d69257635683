/**
 * @module The job ids the runtime draws itself (a next step's, a
 * submission's first step, a redriven step) when a caller's job took the
 * id drawn next. Ids drawn within one millisecond count up by one (the
 * MockClock is not advanced), so a caller can name and take that id: the
 * runtime passes it over, whether the caller took it before the draw or
 * between the draw and the commit, and the caller's job is left as it was.
 * A caller's own id that is taken is still refused.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DuplicateJobIdError, Engine, type EnqueueOptions, SettlementEffects, StepOutcome, type Queue } from "taquba";
import { HEADER_RUN_ID } from "../../runtime/workflow/records/reserved.js";
import { jobKey } from "../../runtime/queue/keys.js";
import { settledInTurn, type SubmittedAck } from "../../runtime/queue/claim-settle.js";
import { nextUlid, ulidAfter } from "../support/next-ulid.js";
import { dec, enc, type Env, openEnv, runnerOf, until } from "./helpers.js";

/** A promise and the function that resolves it. */
function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/**
 * Takes the id the queue draws next with a caller's job in queue "mine":
 * the caller's enqueue draws one id for its order, so the id after that.
 */
async function takeNextId(queue: Queue): Promise<string> {
  const taken = ulidAfter(queue.nextJobId(), 2);
  await queue.enqueue("mine", enc("the caller's"), { jobId: taken });
  return taken;
}

/** The caller's job is as it enqueued it: pending in its own queue, untouched by the run. */
async function expectCallersJob(env: Env, taken: string): Promise<void> {
  expect(await env.queue.view().job(taken)).toMatchObject({ id: taken, queueName: "mine", state: "pending", headers: {}, attempt: 0 });
  const claimed = await env.queue.claim("mine");
  expect([claimed?.id, dec(claimed?.payload)]).toEqual([taken, "the caller's"]);
}

async function ended(env: Env, runId: string): Promise<string | undefined> {
  await until(async () => (await env.runtime.status(runId))?.state === "terminated", `run ${runId} ended`);
  return (await env.runtime.outcome(runId))?.status;
}

/**
 * Runs of two steps: step 0 continues (after `beforeStep0` returned), step 1 fails
 * while `failing` holds and succeeds otherwise; each step's job id is recorded.
 */
function twoSteps(state: { failing: boolean; jobIds: string[] }, beforeStep0: () => Promise<void> = async () => {}) {
  return runnerOf(async (s) => {
    state.jobIds.push(s.jobId);
    if (s.stepNumber === 0) {
      await beforeStep0();
      return StepOutcome.continueNow(enc("next"));
    }
    return state.failing ? StepOutcome.fail("failing") : StepOutcome.succeed(enc("done"));
  });
}

/** Has the caller take the id of the first enqueue of run `runId` that `method` commits, just before that commit. */
function takeAtCommit(env: Env, method: "enqueueWithEffects" | "enqueueIfUnchanged" | "enqueueSuperseding", runId: string): { taken: string | undefined } {
  const took: { taken: string | undefined } = { taken: undefined };
  const queue = env.queue as unknown as Record<string, (name: string, payload: Uint8Array, opts: EnqueueOptions, ...rest: unknown[]) => Promise<unknown>>;
  const original = queue[method]!.bind(env.queue);
  queue[method] = async (name, payload, opts, ...rest) => {
    if (took.taken === undefined && opts.headers?.[HEADER_RUN_ID] === runId && opts.jobId !== undefined) {
      took.taken = opts.jobId;
      await env.queue.enqueue("mine", enc("the caller's"), { jobId: opts.jobId });
    }
    return original(name, payload, opts, ...rest);
  };
  return took;
}

describe("a job id the runtime draws that a caller's job took", () => {
  it("is passed over by a step's next step: the run goes on and the caller's job stays as it was", async () => {
    const entered = latch();
    const gate = latch();
    const state = { failing: false, jobIds: [] as string[] };
    const env = await openEnv(
      twoSteps(state, async () => {
        entered.open();
        await gate.promise;
      }),
    );
    try {
      await env.runtime.submit({ runId: "r", input: enc("in") });
      await entered.promise;
      // Taken while step 0 runs, before its settlement draws the id of step 1's job.
      const taken = await takeNextId(env.queue);
      gate.open();
      expect(await ended(env, "r")).toBe("succeeded");
      expect(state.jobIds[1]).toBe(nextUlid(taken));
      await expectCallersJob(env, taken);
      expect(env.logged).toEqual([]);
    } finally {
      gate.open();
      await env.stop();
    }
  });

  it("is passed over by a submission, taken before it or between its draw and its commit", async () => {
    const state = { failing: false, jobIds: [] as string[] };
    const env = await openEnv(twoSteps(state));
    try {
      const before = await takeNextId(env.queue);
      const out = await env.runtime.submit({ runId: "a", input: enc("in") });
      expect(out).toEqual({ runId: "a", jobId: nextUlid(before), newlySubmitted: true });
      const took = takeAtCommit(env, "enqueueIfUnchanged", "b");
      const second = await env.runtime.submit({ runId: "b", input: enc("in") });
      expect(took.taken).toBeDefined();
      expect(second.newlySubmitted).toBe(true);
      expect(second.jobId).not.toBe(took.taken);
      expect([await ended(env, "a"), await ended(env, "b")]).toEqual(["succeeded", "succeeded"]);
      // Each run's first step ran as the job the submission reported.
      expect(state.jobIds).toContain(out.jobId);
      expect(state.jobIds).toContain(second.jobId);
      expect(await env.queue.view().job(before)).toMatchObject({ queueName: "mine", state: "pending" });
      await expectCallersJob(env, before);
      await expectCallersJob(env, took.taken!);
      expect(env.logged).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("is passed over by a debounced submission taken between its draw and its commit", async () => {
    const state = { failing: false, jobIds: [] as string[] };
    const env = await openEnv(twoSteps(state));
    try {
      const took = takeAtCommit(env, "enqueueSuperseding", "d");
      const out = await env.runtime.submit({ runId: "d", input: enc("in"), options: { debounce: { key: "k", periodMs: 1_000 } } });
      expect(took.taken).toBeDefined();
      expect(out.jobId).not.toBe(took.taken);
      expect(await env.queue.view().job(out.jobId)).toMatchObject({ state: "scheduled", debounceKey: "k" });
      await expectCallersJob(env, took.taken!);
    } finally {
      await env.stop();
    }
  });

  it("is passed over by a redrive, taken before it or between its draw and its commit", async () => {
    const state = { failing: true, jobIds: [] as string[] };
    const env = await openEnv(twoSteps(state));
    try {
      await env.runtime.submit({ runId: "r", input: enc("in") });
      expect(await ended(env, "r")).toBe("failed");
      const before = await takeNextId(env.queue);
      const out = await env.runtime.retryRun("r");
      expect(out).toEqual({ runId: "r", step: 1, jobId: nextUlid(before) });
      expect(await ended(env, "r")).toBe("failed");
      await expectCallersJob(env, before);
      state.failing = false;
      const took = takeAtCommit(env, "enqueueWithEffects", "r");
      const again = await env.runtime.retryRun("r");
      expect(took.taken).toBeDefined();
      expect(again.jobId).not.toBe(took.taken);
      expect(await ended(env, "r")).toBe("succeeded");
      expect(state.jobIds.at(-1)).toBe(again.jobId);
      await expectCallersJob(env, took.taken!);
      expect(env.logged).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("a caller's own job id in a submission's effects that is taken is refused, not replaced, and the run is not submitted", async () => {
    const env = await openEnv(twoSteps({ failing: false, jobIds: [] }));
    try {
      await env.queue.enqueue("mine", enc("first"), { jobId: "caller-1" });
      const effects = new SettlementEffects().enqueue("mine", enc("second"), { jobId: "caller-1" });
      const refused = await env.runtime.submit({ runId: "e", input: enc("in"), effects }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DuplicateJobIdError);
      expect((refused as DuplicateJobIdError).jobId).toBe("caller-1");
      expect(await env.runtime.status("e")).toBeNull();
      expect(await env.queue.view().stats("mine")).toMatchObject({ pending: 1 });
    } finally {
      await env.stop();
    }
  });
});

/**
 * Has the caller take the next step's job id that the first continuing
 * settlement of run `runId` names, just before that settlement commits
 * (after its draw, its pointer and history are built).
 */
function takeAtAck(env: Env, runId: string): { taken: string | undefined } {
  const took: { taken: string | undefined } = { taken: undefined };
  const take = async (effects: SettlementEffects | undefined): Promise<void> => {
    const next = effects?.enqueues.find((i) => i.opts?.headers?.[HEADER_RUN_ID] === runId);
    if (took.taken === undefined && next?.opts?.jobId !== undefined) {
      took.taken = next.opts.jobId;
      await env.queue.enqueue("mine", enc("the caller's"), { jobId: next.opts.jobId });
    }
  };
  const queue = env.queue as unknown as Record<string, ((job: unknown, effects?: SettlementEffects, ...rest: unknown[]) => unknown) | undefined>;
  for (const method of ["ack", "ackClaimingNext"]) {
    const original = queue[method]?.bind(env.queue);
    if (original === undefined) continue;
    queue[method] = async (job, effects, ...rest) => {
      await take(effects);
      return original(job, effects, ...rest);
    };
  }
  const inTurn = queue.ackClaimingNextInTurn?.bind(env.queue);
  if (inTurn !== undefined) {
    // The in-turn ack answers with its submitted commit; a hook that must wait first answers as `ackClaimingNext` does.
    queue.ackClaimingNextInTurn = async (job, effects, ...rest) => {
      await take(effects);
      const s = inTurn(job, effects, ...rest) as Promise<unknown> | SubmittedAck;
      return s instanceof Promise ? s : settledInTurn(s);
    };
  }
  return took;
}

describe("a next step's job id a caller's job takes between the draw and the settlement's commit", () => {
  const cases: { what: string; continueWith: () => StepOutcome; release?: (env: Env) => Promise<unknown> }[] = [
    { what: "continued at once", continueWith: () => StepOutcome.continueNow(enc("next")) },
    {
      what: "continued after a delay",
      continueWith: () => StepOutcome.continueAfter(enc("next"), 5_000),
      release: async (env) => env.clock.advance(5_000),
    },
    {
      what: "continued on a signal",
      continueWith: () => StepOutcome.continueOnSignal(enc("next"), "order-7", 60_000),
      release: (env) => env.runtime.signal("order-7", enc("paid")),
    },
  ];
  for (const c of cases) {
    it(`is passed over at once by a step ${c.what}: the settlement draws again, the run goes on and the caller's job stays as it was`, async () => {
      const jobIds: string[] = [];
      const env = await openEnv(
        runnerOf(async (s) => {
          jobIds.push(s.jobId);
          return s.stepNumber === 0 ? c.continueWith() : StepOutcome.succeed(enc("done"));
        }),
      );
      try {
        const took = takeAtAck(env, "r");
        await env.runtime.submit({ runId: "r", input: enc("in") });
        await until(async () => took.taken !== undefined && (await env.runtime.status("r"))?.step === 1, "step 1 pointed at");
        await c.release?.(env);
        // No lease runs out (the clock stands still but for a delay's own time): the step was settled again at once.
        expect(await ended(env, "r")).toBe("succeeded");
        expect(jobIds).toHaveLength(2);
        expect(jobIds[1]).not.toBe(took.taken);
        await expectCallersJob(env, took.taken!);
        expect(env.logged).toEqual([]);
      } finally {
        await env.stop();
      }
    });
  }
});

describe("a job id the runtime draws for a run's first step or a redriven step", () => {
  const realHas = Engine.prototype.has;
  afterEach(() => {
    Engine.prototype.has = realHas;
  });

  /** Records every key any engine of the process is asked whether it holds, until the test ends. */
  function recordLookups(): Set<string> {
    const asked = new Set<string>();
    Engine.prototype.has = function (this: Engine, key: string) {
      asked.add(key);
      return realHas.call(this, key);
    };
    return asked;
  }

  it("is inserted without a look-up of its key when no caller's id was named since the draw", async () => {
    const state = { failing: true, jobIds: [] as string[] };
    const env = await openEnv(twoSteps(state));
    try {
      const asked = recordLookups();
      const plain = await env.runtime.submit({ runId: "a", input: enc("in") });
      const debounced = await env.runtime.submit({ runId: "d", input: enc("in"), options: { debounce: { key: "k", periodMs: 1_000 } } });
      expect([plain.newlySubmitted, debounced.newlySubmitted]).toEqual([true, true]);
      expect(await ended(env, "a")).toBe("failed");
      const redriven = await env.runtime.retryRun("a");
      expect(redriven.step).toBe(1);
      expect(await ended(env, "a")).toBe("failed");
      for (const id of [plain.jobId, debounced.jobId, redriven.jobId]) expect(asked.has(jobKey(id)), `job ${id} looked up`).toBe(false);
      // The jobs were inserted under those ids all the same.
      expect(await env.queue.view().job(debounced.jobId)).toMatchObject({ state: "scheduled", debounceKey: "k" });
      expect(state.jobIds).toEqual([plain.jobId, state.jobIds[1], redriven.jobId]);
      expect(env.logged).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("is looked up, and drawn again, when a caller's job named it after the draw", async () => {
    const env = await openEnv(twoSteps({ failing: false, jobIds: [] }));
    try {
      const asked = recordLookups();
      const took = takeAtCommit(env, "enqueueIfUnchanged", "c");
      const out = await env.runtime.submit({ runId: "c", input: enc("in") });
      expect(took.taken).toBeDefined();
      expect(asked.has(jobKey(took.taken!))).toBe(true);
      expect(out.jobId).not.toBe(took.taken);
      expect(await ended(env, "c")).toBe("succeeded");
      await expectCallersJob(env, took.taken!);
    } finally {
      await env.stop();
    }
  });
});
