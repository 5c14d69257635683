/**
 * @module A parent run id submitted again after its run ended starts
 * children of its own also when a custom `WorkflowQueue` names its step
 * jobs, and so hands the later submission's first step the job id the
 * earlier run's first step had: the submission that names its children is
 * drawn at submission, never taken from a job id.
 */
import { describe, expect, it } from "vitest";
import { NoopTerminalHook, StepError, StepOutcome, StoreCorruptedError, WorkflowRuntime, type Step, type StepRunner } from "taquba";
import { decodeRunRecord, encodeRunRecord, type RunRecord } from "../../runtime/workflow/records/records.js";
import { decodeIndexEntry, encodeIndexEntry } from "../../runtime/workflow/runs/run-index.js";
import { namingQueue } from "./fixtures/naming-queue.js";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";

const Q = "workflow-steps";

/**
 * Parents that start one child (its input, the parent's) and return the child's end; children that return their input.
 * While `failJoins.value` holds, a parent fails permanently once its child ended.
 */
function parentsAndChildren(starts: string[], failJoins = { value: false }): StepRunner {
  return {
    async runStep(s: Step) {
      const text = dec(s.payload);
      if (text.startsWith("child:")) {
        starts.push(`${s.runId}=${text}`);
        return StepOutcome.succeed(enc(text.slice("child:".length)));
      }
      if (text.startsWith("join:")) {
        const o = await s.children.outcome(s.signal as Uint8Array);
        if (failJoins.value) throw StepError.permanent(new Error("the parent fails once its child ended"));
        return StepOutcome.succeed(enc(`${o.runId}:${o.status}:${dec(o.result)}`));
      }
      const started = await s.children.start({ input: enc(`child:${text}`) });
      return StepOutcome.continueOnChild(enc("join:"), started.completionKey);
    },
  };
}

describe("a parent run id submitted again whose first step a naming queue names as the earlier one's", () => {
  it("starts and joins a child of its own, each time", async () => {
    const starts: string[] = [];
    // Each submission's first step job is named "first" (the queue's ack freed the id again).
    const names: string[] = [];
    const env = await openEnv(parentsAndChildren(starts), { wrapQueue: namingQueue(names) });
    try {
      const ends: string[] = [];
      const submissions = new Set<string>();
      const inputs = ["one", "two", "three", "four", "five", "six"];
      for (const input of inputs) {
        names.push("first");
        const out = await env.runtime.submit({ runId: "p", input: enc(input) });
        expect(out.newlySubmitted).toBe(true);
        // SubmitOutcome.jobId keeps its meaning: step 0's job id.
        expect(out.jobId).toBe("first");
        const end = await env.runtime.wait("p");
        expect(end.termination.status, end.termination.error).toBe("succeeded");
        ends.push(dec(end.outcome?.result));
        submissions.add((await env.runtime.inspectRun("p"))!.submission!);
      }
      expect(ends.map((e) => e.split(":").slice(1).join(":"))).toEqual(inputs.map((i) => `succeeded:${i}`));
      expect(new Set(ends.map((e) => e.split(":")[0])).size).toBe(inputs.length);
      expect(starts).toHaveLength(inputs.length);
      expect(submissions.size).toBe(inputs.length);
      for (const s of submissions) expect(s).not.toBe("first");
    } finally {
      await env.stop();
    }
  });

  it("keeps its own child through retryRun, whose re-opened step the queue names as the earlier ones", async () => {
    const starts: string[] = [];
    const failJoins = { value: false };
    const names: string[] = [];
    const env = await openEnv(parentsAndChildren(starts, failJoins), { wrapQueue: namingQueue(names) });
    try {
      names.push("first");
      await env.runtime.submit({ runId: "p", input: enc("one") });
      expect((await env.runtime.wait("p")).termination.status).toBe("succeeded");
      failJoins.value = true;
      names.push("first");
      await env.runtime.submit({ runId: "p", input: enc("two") });
      expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      const submission = (await env.runtime.inspectRun("p"))!.submission;
      failJoins.value = false;
      names.push("first");
      await env.runtime.retryRun("p", { fromStep: 0 });
      const end = await env.runtime.wait("p");
      expect(end.termination.status, end.termination.error).toBe("succeeded");
      // The re-opened run found the child its submission started: no third child, its end read again.
      expect(starts).toHaveLength(2);
      expect(dec(end.outcome?.result)).toBe(`p-s0-0-p${submission}:succeeded:two`);
      expect((await env.runtime.inspectRun("p"))!.submission).toBe(submission);
    } finally {
      await env.stop();
    }
  });

  it("starts children of its own when two runtimes over one queue take turns submitting it", async () => {
    const starts: string[] = [];
    const namesA: string[] = [];
    const namesB: string[] = [];
    const a = await openEnv(parentsAndChildren(starts), { wrapQueue: namingQueue(namesA) });
    const b = WorkflowRuntime.builder(namingQueue(namesB)(a.queue), a.store, parentsAndChildren(starts), NoopTerminalHook).build();
    const workerB = b.spawn();
    try {
      const ends: string[] = [];
      for (const [i, input] of ["one", "two", "three", "four"].entries()) {
        const [runtime, names] = i % 2 === 0 ? [a.runtime, namesA] : [b, namesB];
        names.push("first");
        expect((await runtime.submit({ runId: "p", input: enc(input) })).jobId).toBe("first");
        // Either worker may end it, and a wait hears of an end committed by another runtime at its poll only: read until ended.
        await until(async () => (await runtime.status("p"))?.state === "terminated", `run "p" with input ${input} ended`, 20_000);
        const end = await runtime.outcome("p");
        expect(end?.status, end?.error).toBe("succeeded");
        ends.push(dec(end?.result));
      }
      expect(ends.map((e) => e.split(":")[2])).toEqual(["one", "two", "three", "four"]);
      expect(new Set(ends.map((e) => e.split(":")[0])).size).toBe(4);
      expect(starts).toHaveLength(4);
    } finally {
      await workerB.shutdown();
      await a.stop();
    }
  });
});

/** Rewrites run `runId`'s record through `change`. */
async function rewriteRun(env: Env, runId: string, change: (r: RunRecord) => Record<string, unknown>): Promise<Uint8Array> {
  const key = `workflow/runs/${Q}/${runId}`;
  const bytes = await env.queue.kvGet(key);
  const damaged = encodeRunRecord(change(decodeRunRecord(bytes!, key)) as unknown as RunRecord);
  await env.queue.kvPut(key, damaged);
  return damaged;
}

describe("a run record damaged in its submission", () => {
  const damages: Array<[string, (r: RunRecord) => Record<string, unknown>, RegExp]> = [
    ["a number", (r) => ({ ...r, submission: 42 }), /has a submission of 42/],
    ["a key path", (r) => ({ ...r, submission: "a/b" }), /has a submission of "a\/b"/],
    ["empty", (r) => ({ ...r, submission: "" }), /has a submission of ""/],
    ["too long", (r) => ({ ...r, submission: "x".repeat(129) }), /not 1 to 128 characters/],
    [
      "missing beside a memo set",
      (r) => {
        const { submission: _s, ...rest } = r;
        return rest;
      },
      /has a memo set but no submission/,
    ],
  ];
  for (const [what, change, message] of damages) {
    it(`(${what}) is refused with StoreCorruptedError naming the run, and left as it is`, async () => {
      const env = await openEnv(parentsAndChildren([]), { start: false });
      try {
        await env.runtime.submit({ runId: "damaged-run", input: enc("one") });
        const damaged = await rewriteRun(env, "damaged-run", change);
        for (const call of [() => env.runtime.submit({ runId: "damaged-run", input: enc("one") }), () => env.runtime.inspectRun("damaged-run")]) {
          const e = await call().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(e).toBeInstanceOf(StoreCorruptedError);
          expect((e as Error).message).toMatch(message);
          expect((e as Error).message).toContain("damaged-run");
        }
        expect(await env.queue.kvGet(`workflow/runs/${Q}/damaged-run`)).toEqual(damaged);
      } finally {
        await env.stop();
      }
    });
  }

  it("(its index entry holding a memo set but no submission) refuses retryRun and changes nothing", async () => {
    const env = await openEnv(parentsAndChildren([], { value: true }));
    try {
      await env.runtime.submit({ runId: "p", input: enc("one") });
      expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      const entries = (await env.queue.kvScan(`workflow/run-index/${Q}/`)).entries;
      let damaged = 0;
      for (const e of entries) {
        const { submission, ...older } = decodeIndexEntry(e.value, e.key);
        if (submission === undefined) continue;
        await env.queue.kvPut(e.key, encodeIndexEntry(older));
        damaged++;
      }
      expect(damaged).toBeGreaterThan(0);
      const terminal = await env.queue.kvGet(`workflow/outcomes/${Q}/p`);
      await expect(env.runtime.retryRun("p", { fromStep: 0 })).rejects.toBeInstanceOf(StoreCorruptedError);
      expect(await env.queue.kvGet(`workflow/outcomes/${Q}/p`)).toEqual(terminal);
      expect(await env.queue.kvGet(`workflow/runs/${Q}/p`)).toBeNull();
    } finally {
      await env.stop();
    }
  });
});
