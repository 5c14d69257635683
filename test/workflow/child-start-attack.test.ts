/**
 * @module Child starts attacked where a step's starts meet crowds and
 * failures: many starts on one key at once over a LocalStore (the child
 * ends quickly, so later starts find an ended child), and a start left
 * unawaited whose child's submission fails while its step continues the
 * run. One key names one child, started and run once; the step's
 * settlement goes on once every start landed or failed, and the run knows
 * exactly the children that exist.
 */
import { describe, expect, it } from "vitest";
import { type ChildRunStart, type EnqueueOptions, LocalStore, StepOutcome } from "taquba";
import { childrenPrefix } from "../../runtime/workflow/records/kv-keys.js";
import { HEADER_RUN_ID } from "../../runtime/workflow/records/reserved.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";

const tempDir = useTempDirs("taquba-child-start-");

describe("child starts in crowds and failures", () => {
  it("twenty starts on one key at once over a LocalStore: one child, started once, run once", async () => {
    let childRuns = 0;
    let answers: ChildRunStart[] = [];
    const runner = runnerOf(async (s) => {
      if (dec(s.payload) === "child") {
        childRuns++;
        return StepOutcome.succeed(enc("done"));
      }
      answers = await Promise.all(Array.from({ length: 20 }, () => s.children.start({ input: enc("child"), key: "only" })));
      return StepOutcome.succeed(enc("parent"));
    });
    const env = await openEnv(runner, { store: new LocalStore(await tempDir()) });
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      expect((await env.runtime.wait("p")).termination.status).toBe("succeeded");
      expect(new Set(answers.map((a) => String(a.runId)))).toEqual(new Set(["p-s0-only"]));
      expect((await env.runtime.wait("p-s0-only")).termination.status).toBe("succeeded");
      expect(childRuns).toBe(1);
      expect((await env.runtime.listRuns()).runs.map((r) => String(r.runId)).sort()).toEqual(["p", "p-s0-only"]);
      expect(answers.filter((a) => a.newlyStarted)).toHaveLength(1);
    } finally {
      await env.stop();
    }
  });

  it("an unawaited start whose child's submission fails: the run goes on to its next step and ends with no child and no entry", async () => {
    let start: Promise<unknown> | undefined;
    let submitting!: () => void;
    const childSubmitting = new Promise<void>((resolve) => {
      submitting = resolve;
    });
    const runner = runnerOf(async (s) => {
      if (dec(s.payload) === "second") return StepOutcome.succeed(enc("ended"));
      start = s.children.start({ input: enc("child"), parentClose: "cancel" }).then(
        (v) => v,
        (e: unknown) => e,
      );
      // The step returns once the start's submission has reached the queue, past every check of the seal. (Waiting
      // only for the run's parent mark left a check of the seal after it, which a step that returned first would meet.)
      await childSubmitting;
      return StepOutcome.continueNow(enc("second"));
    });
    const env = await openEnv(runner, { start: false });
    const queue = env.queue;
    const failure = new Error("the child's submission failed");
    // A child's submission commits through the queue's guarded enqueue (held to the parent's step being current).
    const enqueueIfUnchanged = queue.enqueueIfUnchanged.bind(queue);
    queue.enqueueIfUnchanged = async (name: string, payload: Uint8Array, opts: EnqueueOptions, effects, unchanged) => {
      if (opts.headers?.[HEADER_RUN_ID] === "p-s0-0") {
        submitting();
        throw failure;
      }
      return enqueueIfUnchanged(name, payload, opts, effects, unchanged);
    };
    const worker = env.runtime.spawn();
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      const end = await env.runtime.wait("p");
      expect(end.termination.status).toBe("succeeded");
      expect(await start).toBe(failure);
      expect(await env.runtime.status("p-s0-0")).toBeNull();
      expect((await queue.kvScan(childrenPrefix("workflow-steps", "p"))).entries).toEqual([]);
    } finally {
      await worker.shutdown();
      await env.stop();
    }
  });
});
