/**
 * @module Which record `step.children.outcome` reads for an end that left
 * its result or whole error text behind: the record of the termination the
 * end reports, also when the child was re-opened (`retryRun`) and ended
 * again before the parent's step read it; and when that record is gone, a
 * `ChildResultUnavailableError` saying what happened.
 */
import { describe, expect, it } from "vitest";
import { ChildResultUnavailableError, RunId, StepOutcome, type Step, type StepRunner } from "taquba";
import { encodeValue } from "../../runtime/workflow/records/codec.js";
import { namingQueue } from "./fixtures/naming-queue.js";
import { dec, enc, openEnv, until } from "./helpers.js";

/** An error text longer than an end carries (8192 characters), ending in what tells it apart. */
const longError = (tag: string) => `${"x".repeat(9000)}${tag}`;

type Payload = { kind: "parent"; named?: boolean } | { kind: "join" } | { kind: "child"; big?: boolean } | { kind: "probe"; end: number[] };
const json = (p: Payload) => enc(JSON.stringify(p));

/** What `children.outcome` gave a step, or the error it threw, as text. */
async function outcomeText(s: Step, signal: Uint8Array): Promise<string> {
  try {
    const o = await s.children.outcome(signal);
    return JSON.stringify({ status: o.status, tail: o.error?.slice(-2), bytes: o.result?.byteLength });
  } catch (e) {
    return JSON.stringify({ name: (e as Error).name, reason: (e as ChildResultUnavailableError).reason, message: (e as Error).message });
  }
}

describe("a child's end read by its parent", () => {
  it("gives the whole error text of the end the step was entered with, though the child was retried and failed again meanwhile", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let joinEntered = false;
    const childRuns = new Map<string, number>();
    const runner: StepRunner = {
      async runStep(s) {
        const p = JSON.parse(dec(s.payload)) as Payload;
        if (p.kind === "parent") {
          const c = await s.children.start({ input: json({ kind: "child" }) });
          return StepOutcome.continueOnChild(json({ kind: "join" }), c.completionKey);
        }
        if (p.kind === "join") {
          joinEntered = true;
          await gate;
          return StepOutcome.succeed(enc(await outcomeText(s, s.signal as Uint8Array)));
        }
        const n = (childRuns.get(s.runId) ?? 0) + 1;
        childRuns.set(s.runId, n);
        return StepOutcome.fail(longError(`#${n}`));
      },
    };
    const env = await openEnv(runner);
    try {
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent" }) });
      await until(() => joinEntered, "the parent's join step holds the child's first end");
      await env.runtime.retryRun("p-s0-0");
      await until(async () => childRuns.get("p-s0-0") === 2 && (await env.runtime.status("p-s0-0"))?.state === "terminated", "the child failed again");
      expect((await env.runtime.outcome("p-s0-0"))?.error?.slice(-2)).toBe("#2");
      release();
      expect(JSON.parse(dec((await env.runtime.wait("p")).outcome?.result))).toEqual({ status: "failed", tail: "#1" });
    } finally {
      release();
      await env.stop();
    }
  });

  it("says the result record was removed, or that the child was re-opened, instead of guessing", async () => {
    const runner: StepRunner = {
      async runStep(s) {
        const p = JSON.parse(dec(s.payload)) as Payload;
        if (p.kind === "parent") {
          const c = await s.children.start({ input: json({ kind: "child", big: true }) });
          return StepOutcome.continueOnChild(json({ kind: "join" }), c.completionKey);
        }
        if (p.kind === "join") return StepOutcome.continueOnSignal(json({ kind: "probe", end: [...(s.signal as Uint8Array)] }), `go-${s.runId}`, 3_600_000);
        if (p.kind === "probe") return StepOutcome.succeed(enc(await outcomeText(s, Uint8Array.from(p.end))));
        if (p.big === true) return StepOutcome.succeed(new Uint8Array(300 * 1024));
        return StepOutcome.continueOnSignal(json({ kind: "child" }), `never-${s.runId}`, 3_600_000);
      },
    };
    const env = await openEnv(runner);
    try {
      // The result stayed in the child's record; the record is removed before the parent reads it.
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent" }) });
      await until(async () => (await env.runtime.status("p"))?.step === 2, "the parent holds the child's end");
      await env.runtime.memoStore.clearMemosForRun("p-s0-0");
      await env.runtime.signal("go-p", enc("read"));
      const removed = JSON.parse(dec((await env.runtime.wait("p")).outcome?.result));
      expect(removed).toMatchObject({ name: "ChildResultUnavailableError", reason: "removed" });
      expect(removed.message).toMatch(/child run "p-s0-0".*succeeded at step 0 .*result record is gone/);
      expect(removed.message).not.toMatch(/re-opened/);

      // An end written before ends named their termination, for a child running again: the message says so.
      await env.runtime.submit({ runId: "again", input: json({ kind: "child" }) });
      await until(async () => (await env.runtime.status("again"))?.step === 1, "the child runs");
      const legacy = encodeValue({ runId: RunId.parse("again"), status: "succeeded", finalStep: 0, resultOmitted: true });
      await env.runtime.submit({ runId: "reader", input: json({ kind: "probe", end: [...legacy] }) });
      const replaced = JSON.parse(dec((await env.runtime.wait("reader")).outcome?.result));
      expect(replaced).toMatchObject({ name: "ChildResultUnavailableError", reason: "replaced" });
      expect(replaced.message).toMatch(/re-opened since \(retryRun\) and is running again/);
      expect(replaced.message).not.toMatch(/retention removed/);
    } finally {
      await env.stop();
    }
    expect(new ChildResultUnavailableError("c", "removed", "gone")).toMatchObject({ code: "CHILD_RESULT_UNAVAILABLE", retryable: false });
  });
  it("says the end was replaced when the child's run id ran again under a step queue that handed out its step job id again", async () => {
    const names: string[] = [];
    const passes = new Map<string, number>();
    const runner: StepRunner = {
      async runStep(s) {
        const p = JSON.parse(dec(s.payload)) as Payload;
        if (p.kind === "parent") {
          // The child's first step job is named "again" in every pass: each pass's end has the token "again:1".
          names.push("again");
          const c = await s.children.start({ input: json({ kind: "child", big: true }) });
          return StepOutcome.continueOnChild(json({ kind: "join" }), c.completionKey);
        }
        if (p.kind === "join") return StepOutcome.continueOnSignal(json({ kind: "probe", end: [...(s.signal as Uint8Array)] }), `go-${s.runId}`, 3_600_000);
        if (p.kind === "probe") return StepOutcome.succeed(enc(await outcomeText(s, Uint8Array.from(p.end))));
        const n = (passes.get(s.runId) ?? 0) + 1;
        passes.set(s.runId, n);
        // Past what an end carries: each pass's result stays in the child's result record, under the end's token.
        return StepOutcome.succeed(new Uint8Array(300 * 1024).fill(n));
      },
    };
    const env = await openEnv(runner, { wrapQueue: namingQueue(names) });
    try {
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent" }) });
      await until(async () => (await env.runtime.status("p"))?.step === 2, "the parent holds the child's first end");
      // The child's run id submitted again (a succeeded run is not retried): its first step job is named "again" too.
      names.push("again");
      await env.runtime.submit({ runId: "p-s0-0", input: json({ kind: "child", big: true }) });
      await until(async () => passes.get("p-s0-0") === 2 && (await env.runtime.status("p-s0-0"))?.state === "terminated", "the child's second pass ended");
      // Both passes' step jobs took the name given.
      expect(names).toEqual([]);
      // The child's latest end is its second pass's, read as such.
      expect((await env.runtime.outcome("p-s0-0"))?.result?.[0]).toBe(2);
      await env.runtime.signal("go-p", enc("read"));
      const replaced = JSON.parse(dec((await env.runtime.wait("p")).outcome?.result));
      expect(replaced).toMatchObject({ name: "ChildResultUnavailableError", reason: "replaced" });
      expect(replaced.message).toContain(
        'the result of child run "p-s0-0" cannot be read: it succeeded at step 0 with a result too large to travel with its end',
      );
      expect(replaced.message).toMatch(
        /ran again since \(retryRun, or a submission again under its run id\) and ended again with the same step job id and attempt/,
      );
      expect(replaced.message).toMatch(/read the child's latest end with runtime\.outcome, or start the child again under a new key$/);
      // In the user's terms: no store key, no token.
      expect(replaced.message).not.toMatch(/workflow\/|again:1/);
    } finally {
      await env.stop();
    }
  });
});
