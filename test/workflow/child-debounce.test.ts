/**
 * @module Debounced child runs: a child started with `RunOptions.debounce`
 * waits in its key's window like any debounced run, then runs, and its end
 * reaches its parent; a later debounced start with the key (by another
 * parent) supersedes it, and its parent learns it ended superseded. The
 * start still commits only while its step is current (see
 * child-start-stale.test.ts for the refused ones).
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, ValidationError } from "taquba";
import { runKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeRunRecord } from "../../runtime/workflow/records/records.js";
import { advanceUntil, dec, enc, openEnv, runnerOf, until } from "./helpers.js";

const PERIOD = 1_000;

/** Parents start child "c" debounced on key "k" and join its end; children succeed. */
function debouncingParents(started: Map<string, string>) {
  return runnerOf(async (s) => {
    const p = dec(s.payload);
    if (p === "child") return StepOutcome.succeed(enc("child done"));
    if (p === "join") {
      const o = await s.children.outcome(s.signal as Uint8Array);
      return StepOutcome.succeed(enc(`${o.runId}:${o.status}:${o.errorKind ?? ""}`));
    }
    const child = await s.children.start({ input: enc("child"), key: "c", options: { debounce: { key: "k", periodMs: PERIOD } } });
    started.set(s.runId, child.runId);
    return StepOutcome.continueOnChild(enc("join"), child.completionKey, 3_600_000);
  });
}

describe("a debounced child start", () => {
  it("waits in its window, then runs; its parent joins its end", async () => {
    const started = new Map<string, string>();
    const env = await openEnv(debouncingParents(started));
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(async () => (await env.runtime.status("p"))?.step === 1, "the parent waiting for its child");
      const child = started.get("p")!;
      expect(await env.runtime.status(child)).toMatchObject({ state: "pending", step: 0 });
      const holder = env.queue.debounceHolder("workflow-steps", "k");
      expect(await env.queue.view().job(holder!.jobId)).toMatchObject({ state: "scheduled", runAt: env.clock.now() + PERIOD });
      await advanceUntil(env.clock, env.clock.now() + PERIOD, async () => (await env.runtime.status("p"))?.state === "terminated", "the parent's end");
      const end = await env.runtime.wait("p");
      expect(dec(end.outcome!.result)).toBe(`${child}:succeeded:`);
      expect(dec((await env.runtime.outcome(child))!.result)).toBe("child done");
    } finally {
      await env.stop();
    }
  });

  it("supersedes another parent's child waiting in the window; that parent learns its child ended superseded", async () => {
    const started = new Map<string, string>();
    const env = await openEnv(debouncingParents(started));
    try {
      await env.runtime.submit({ runId: "first", input: enc("parent") });
      await until(async () => (await env.runtime.status("first"))?.step === 1, "the first parent waiting for its child");
      await env.runtime.submit({ runId: "second", input: enc("parent") });
      // The second child replaced the first in the window, before the window ended: no clock moved.
      const firstEnd = await env.runtime.wait("first");
      const firstChild = started.get("first")!;
      const secondChild = started.get("second")!;
      expect(dec(firstEnd.outcome!.result)).toBe(`${firstChild}:cancelled:superseded`);
      expect(await env.runtime.status(firstChild)).toMatchObject({ state: "terminated", status: "cancelled", supersededBy: secondChild });
      expect(await env.runtime.status(secondChild)).toMatchObject({ state: "pending", step: 0 });
      await advanceUntil(
        env.clock,
        env.clock.now() + PERIOD,
        async () => (await env.runtime.status("second"))?.state === "terminated",
        "the second parent's end",
      );
      expect(dec((await env.runtime.wait("second")).outcome!.result)).toBe(`${secondChild}:succeeded:`);
      expect(env.logged).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("with a bad debounce is refused before the run is marked a parent", async () => {
    let refused: unknown;
    const env = await openEnv(
      runnerOf(async (s) => {
        refused = await s.children.start({ input: enc("child"), options: { debounce: { key: "k", periodMs: Number.NaN } } }).catch((e: unknown) => e);
        return StepOutcome.continueOnSignal(enc("waiting"), "never-sent", 3_600_000);
      }),
    );
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(async () => (await env.runtime.status("p"))?.step === 1, "the run at step 1");
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as Error).message).toMatch(/^children\.start\.options\.debounce\.periodMs/);
      const key = runKey("workflow-steps", "p");
      expect(decodeRunRecord((await env.queue.kvGet(key))!, key).hasChildren).toBeUndefined();
      expect(await env.runtime.status("p-s0-0")).toBeNull();
    } finally {
      await env.stop();
    }
  });
});
