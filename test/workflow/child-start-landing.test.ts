/**
 * @module A child start still submitting its child when its step returns
 * the run's end. The start passed the step's seal (so it is not refused),
 * and its child's submission is held back until the run's end would have
 * committed and its children been swept. The run's end must know the
 * child: a `cancel` child is cancelled with its failed parent, an
 * `abandon` child keeps running, and neither leaves an entry behind.
 */
import { describe, expect, it } from "vitest";
import { type ChildRunStart, type EnqueueOptions, type ParentClosePolicy, StepOutcome, ValidationError } from "taquba";
import { childrenPrefix } from "../../runtime/workflow/records/kv-keys.js";
import { HEADER_PARENT_ENDED, HEADER_RUN_ID } from "../../runtime/workflow/records/reserved.js";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

const CHILD = "p-s0-c";

/** A promise and the function that resolves it. */
function latch(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** Starts `starts` children under one key (so all but one find the first), unawaited, and fails the run while the first is held. */
async function raceStartAgainstEnd(parentClose: ParentClosePolicy, starts = 1) {
  const held = latch();
  const release = latch();
  const swept = latch();
  let sweptSeen = false;
  const started: Promise<ChildRunStart | unknown>[] = [];
  const runner = runnerOf(async (s) => {
    if (dec(s.payload) === "child") return StepOutcome.continueOnSignal(enc("waiting"), "never-sent", 3_600_000);
    // Not awaited: the step returns while the start submits its child.
    for (let i = 0; i < starts; i++) {
      started.push(
        s.children.start({ input: enc("child"), key: "c", parentClose }).then(
          (v) => v,
          (e: unknown) => e,
        ),
      );
    }
    await held.promise;
    return StepOutcome.fail("the parent gives up");
  });
  const env = await openEnv(runner, { start: false });
  const queue = env.queue;
  // The child's submission is one commit (its run, its first step, the parent's child entry): held at its entry.
  const enqueueIfUnchanged = queue.enqueueIfUnchanged.bind(queue);
  queue.enqueueIfUnchanged = async (name: string, payload: Uint8Array, opts: EnqueueOptions, effects, unchanged) => {
    if (opts.headers?.[HEADER_RUN_ID] === CHILD) {
      held.open();
      await release.promise;
    }
    return enqueueIfUnchanged(name, payload, opts, effects, unchanged);
  };
  // The job the parent's end enqueues settles its children: observed once acked.
  const ack = queue.ack.bind(queue);
  queue.ack = async (job, effects) => {
    const out = await ack(job, effects);
    if (job.headers[HEADER_PARENT_ENDED] === "p") {
      sweptSeen = true;
      swept.open();
    }
    return out;
  };
  const worker = env.runtime.spawn();
  try {
    await env.runtime.submit({ runId: "p", input: enc("parent") });
    await held.promise;
    // Without waiting for the start, the run ends and its children are swept now; with it, nothing
    // happens until the child lands, so this bounded wait runs out.
    await until(() => sweptSeen, "the parent's children swept", 1500).catch(() => undefined);
    release.open();
    await swept.promise;
    const end = await env.runtime.wait("p");
    expect(end.termination.status).toBe("failed");
    const landed = await Promise.all(started);
    // The held start passed the seal, so its child must be the run's: it started it.
    const newly = landed.filter((l) => !(l instanceof Error) && (l as ChildRunStart).newlyStarted);
    expect(newly).toEqual([expect.objectContaining({ runId: CHILD })]);
    // Another one under its key is refused naming its step (the step returned first) or finds the same child.
    for (const other of landed.filter((l) => !newly.includes(l))) {
      if (other instanceof Error) {
        expect(other).toBeInstanceOf(ValidationError);
        expect(other.message).toMatch(/step 0 of run "p" already returned/);
      } else expect(other).toMatchObject({ runId: CHILD, newlyStarted: false });
    }
    // No entry of a child is left for a sweep that already ran.
    expect((await queue.kvScan(childrenPrefix("workflow-steps", "p"))).entries).toEqual([]);
    return { env, worker };
  } catch (e) {
    await worker.shutdown();
    await env.stop();
    throw e;
  }
}

describe("a child start in flight when its step returns the run's end", () => {
  it("lands before the run's end: its child with the cancel policy is cancelled with the failed parent", async () => {
    const { env, worker } = await raceStartAgainstEnd("cancel");
    await until(async () => (await env.runtime.status(CHILD))?.state === "terminated", "the child's end");
    const child = await env.runtime.status(CHILD);
    expect(child).toMatchObject({ state: "terminated", status: "cancelled" });
    await worker.shutdown();
    await env.stop();
  });

  it("two starts under one key while the run ends: one child, the second refused or finding it, cancelled with the parent", async () => {
    const { env, worker } = await raceStartAgainstEnd("cancel", 2);
    await until(async () => (await env.runtime.status(CHILD))?.state === "terminated", "the child's end");
    expect(await env.runtime.status(CHILD)).toMatchObject({ state: "terminated", status: "cancelled" });
    expect((await env.runtime.listRuns()).runs.map((r) => String(r.runId)).sort()).toEqual(["p", CHILD]);
    await worker.shutdown();
    await env.stop();
  });

  it("lands before the run's end: its child with the abandon policy runs on, and its entry is swept", async () => {
    const { env, worker } = await raceStartAgainstEnd("abandon");
    expect((await env.runtime.status(CHILD))?.state).not.toBe("terminated");
    await env.runtime.cancel(CHILD);
    await env.runtime.wait(CHILD);
    await worker.shutdown();
    await env.stop();
  });
});
