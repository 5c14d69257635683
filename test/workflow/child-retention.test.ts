/**
 * @module Memo retention and child runs: a child's records stay while its
 * parent is known, so a parent re-opened by `retryRun` after the child's
 * window ran out finds the ended child with its recorded end instead of
 * running it a second time; once the parent is swept, the child goes at the
 * next pass. Time is a `MockClock`; sweeps are run by hand.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type Step, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";

const RETENTION = 60_000;

type Payload = { kind: "parent" } | { kind: "join" } | { kind: "final"; child: string } | { kind: "child" };
const json = (p: Payload) => enc(JSON.stringify(p));

/**
 * A parent that starts one child, reads its end, then waits for a signal
 * that tells it to fail or to succeed with the child's result; a child that
 * succeeds with a result naming how often it ran.
 */
function familyRunner(childRuns: Map<string, number>): StepRunner {
  return {
    async runStep(s: Step) {
      const p = JSON.parse(dec(s.payload)) as Payload;
      switch (p.kind) {
        case "parent": {
          const c = await s.children.start({ input: json({ kind: "child" }) });
          return StepOutcome.continueOnChild(json({ kind: "join" }), c.completionKey);
        }
        case "join": {
          const o = await s.children.outcome(s.signal as Uint8Array);
          return StepOutcome.continueOnSignal(json({ kind: "final", child: `${o.status}:${dec(o.result)}` }), `go-${s.runId}`, 3_600_000);
        }
        case "final":
          if (dec(s.signal) === "fail") return StepOutcome.fail("the parent breaks after its child ended");
          return StepOutcome.succeed(enc(p.child));
        case "child": {
          const n = (childRuns.get(s.runId) ?? 0) + 1;
          childRuns.set(s.runId, n);
          return StepOutcome.succeed(enc(`run ${n}`));
        }
      }
    },
  };
}

describe("a child run under memo retention", () => {
  it("is kept while its parent is known, so a parent retried after the child's window runs out gets its recorded end and the child runs once", async () => {
    const childRuns = new Map<string, number>();
    const env = await openEnv(familyRunner(childRuns), { configure: (b) => b.memoRetention(RETENTION).pollIntervalMs(3_600_000) });
    try {
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent" }) });
      await until(async () => (await env.runtime.status("p"))?.step === 2, "the parent read its child's end and waits");
      expect(await env.runtime.status("p-s0-0")).toMatchObject({ state: "terminated", status: "succeeded" });

      // The child's window runs out while its parent waits: the child is kept.
      env.clock.advance(RETENTION + 1);
      expect(await env.runtime.sweepMemos()).toBe(0);
      expect(await env.runtime.status("p-s0-0")).toMatchObject({ state: "terminated", status: "succeeded" });

      // The parent fails half a window later; the child's moved marker expires before the parent's.
      env.clock.advance(RETENTION / 2);
      expect(await env.runtime.signal("go-p", enc("fail"))).toBe("delivered");
      expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      env.clock.advance(RETENTION / 2 + 1);
      expect(await env.runtime.sweepMemos()).toBe(0);
      expect(await env.runtime.status("p-s0-0")).toMatchObject({ state: "terminated", status: "succeeded" });

      // Retried from the step that started the child: the child is found ended, its end delivered again.
      expect(await env.runtime.retryRun("p", { fromStep: 0 })).toMatchObject({ step: 0 });
      await until(async () => (await env.runtime.status("p"))?.step === 2, "the retried parent read its child's end again");
      expect(await env.runtime.signal("go-p", enc("ok"))).toBe("delivered");
      const end = await env.runtime.wait("p");
      expect(dec(end.outcome?.result)).toBe("succeeded:run 1");
      expect(childRuns.get("p-s0-0")).toBe(1);

      // Once the parent is swept, the child goes at the next pass at the latest: nothing is left behind.
      env.clock.advance(RETENTION + 1);
      await env.runtime.sweepMemos();
      expect(await env.runtime.status("p")).toBeNull();
      env.clock.advance(RETENTION + 1);
      await env.runtime.sweepMemos();
      expect(await env.runtime.status("p-s0-0")).toBeNull();
      expect((await env.queue.kvScan("workflow/terminals/")).entries).toHaveLength(0);
    } finally {
      await env.stop();
    }
  });

  it("of an earlier run under its parent's id is swept with its window: the run submitted again there never reads it", async () => {
    const childRuns = new Map<string, number>();
    const env = await openEnv(familyRunner(childRuns), { configure: (b) => b.memoRetention(RETENTION).pollIntervalMs(3_600_000) });
    try {
      await env.runtime.submit({ runId: "r", input: json({ kind: "parent" }) });
      await until(async () => (await env.runtime.status("r"))?.step === 2, "the parent waits");
      expect(await env.runtime.signal("go-r", enc("ok"))).toBe("delivered");
      expect(dec((await env.runtime.wait("r")).outcome?.result)).toBe("succeeded:run 1");
      // The parent id again: a new run, with a child of its own, which waits.
      await env.runtime.submit({ runId: "r", input: json({ kind: "parent" }) });
      await until(async () => (await env.runtime.status("r"))?.step === 2, "the new parent waits");
      const mine = [...childRuns.keys()].find((id) => id !== "r-s0-0")!;
      expect(mine).toMatch(/^r-s0-0-p[0-9A-Za-z]+$/);
      env.clock.advance(RETENTION + 1);
      // The earlier run's child goes; the new run's child is kept while its parent waits.
      expect(await env.runtime.sweepMemos()).toBe(1);
      expect(await env.runtime.status("r-s0-0")).toBeNull();
      expect(await env.runtime.status(mine)).toMatchObject({ state: "terminated", status: "succeeded" });
      expect(await env.runtime.signal("go-r", enc("ok"))).toBe("delivered");
      expect(dec((await env.runtime.wait("r")).outcome?.result)).toBe("succeeded:run 1");
      expect(childRuns.get(mine)).toBe(1);
    } finally {
      await env.stop();
    }
  });

  it("is swept with its window when its parent is gone", async () => {
    const childRuns = new Map<string, number>();
    const env = await openEnv(familyRunner(childRuns), { configure: (b) => b.memoRetention(RETENTION).pollIntervalMs(3_600_000) });
    try {
      await env.runtime.submit({ runId: "q", input: json({ kind: "parent" }) });
      await until(async () => (await env.runtime.status("q"))?.step === 2, "the parent waits");
      expect(await env.runtime.cancel("q")).toBe(true);
      expect((await env.runtime.wait("q")).termination.status).toBe("cancelled");
      env.clock.advance(RETENTION + 1);
      // Parent and child expire together; whichever the pass meets first, both are gone after two passes.
      const swept = (await env.runtime.sweepMemos()) + (await env.runtime.sweepMemos());
      env.clock.advance(RETENTION + 1);
      const later = await env.runtime.sweepMemos();
      expect(swept + later).toBe(2);
      expect(await env.runtime.status("q")).toBeNull();
      expect(await env.runtime.status("q-s0-0")).toBeNull();
    } finally {
      await env.stop();
    }
  });
});
