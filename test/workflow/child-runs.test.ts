/**
 * @module Child runs through the untyped API: a step starts runs as its
 * children and a later step waits for their ends. The child's identity is
 * derived from the parent's run and step, so a retried step starts it
 * once; its end reaches the parent once, also across a restart; a parent
 * that fails or is cancelled cancels its running children (unless they
 * were started with `parentClose: "abandon"`). Over a memory store and a
 * local directory.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, MockClock, StepError, StepOutcome, type ObjectStore, type Step, type StepRunner } from "taquba";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("wf-children-");

type ChildSpec = { key?: string; mode: "succeed" | "fail" | "failOnce" | "wait" | "throw"; value?: string; parentClose?: "cancel" | "abandon" };
type Payload =
  | { kind: "parent"; children: ChildSpec[]; wait: boolean; failAfterStartOnce?: boolean; thenFail?: boolean }
  | { kind: "join"; keys: string[]; got: string[] }
  | { kind: "child"; mode: ChildSpec["mode"]; value?: string }
  | { kind: "child-resume"; value?: string };

const json = (p: Payload) => enc(JSON.stringify(p));

/** A runner of parents that start children and join their ends, and children that end as told. */
function familyRunner(log: { childStarts: Map<string, number>; parentSteps: number; failedOnce: Set<string> }): StepRunner {
  const outcomeText = async (s: Step): Promise<string> => {
    const o = await s.children.outcome(s.signal as Uint8Array);
    if (o.status === "succeeded") return `${o.runId}:succeeded:${dec(o.result)}`;
    return `${o.runId}:${o.status}:${o.errorKind ?? ""}:${o.error ?? ""}`;
  };
  return {
    async runStep(s) {
      const p = JSON.parse(dec(s.payload)) as Payload;
      switch (p.kind) {
        case "parent": {
          log.parentSteps++;
          const keys: string[] = [];
          for (const c of p.children) {
            const started = await s.children.start({
              input: json({ kind: "child", mode: c.mode, ...(c.value === undefined ? {} : { value: c.value }) }),
              ...(c.key === undefined ? {} : { key: c.key }),
              ...(c.parentClose === undefined ? {} : { parentClose: c.parentClose }),
            });
            keys.push(started.completionKey);
          }
          if (p.failAfterStartOnce === true && !log.failedOnce.has(s.runId)) {
            log.failedOnce.add(s.runId);
            throw StepError.transient(new Error("fails once after starting its children"));
          }
          if (p.thenFail === true) throw StepError.permanent(new Error("the parent fails while its children run"));
          if (!p.wait) return StepOutcome.succeed(enc(keys.join(",")));
          const [first, ...rest] = keys;
          return StepOutcome.continueOnChild(json({ kind: "join", keys: rest, got: [] }), first!);
        }
        case "join": {
          const got = [...p.got, await outcomeText(s)];
          const [next, ...rest] = p.keys;
          if (next === undefined) return StepOutcome.succeed(enc(got.join("|")));
          return StepOutcome.continueOnChild(json({ kind: "join", keys: rest, got }), next);
        }
        case "child": {
          log.childStarts.set(s.runId, (log.childStarts.get(s.runId) ?? 0) + 1);
          if (p.mode === "succeed") return StepOutcome.succeed(enc(p.value ?? "ok"));
          if (p.mode === "fail") return StepOutcome.fail(p.value ?? "child said no");
          if (p.mode === "failOnce") {
            if (!log.failedOnce.has(s.runId)) {
              log.failedOnce.add(s.runId);
              return StepOutcome.fail("first pass fails");
            }
            return StepOutcome.succeed(enc(p.value ?? "second pass"));
          }
          if (p.mode === "throw") throw StepError.permanent(new Error(p.value ?? "child broke"));
          return StepOutcome.continueOnSignal(json({ kind: "child-resume", ...(p.value === undefined ? {} : { value: p.value }) }), `go-${s.runId}`, 3_600_000);
        }
        case "child-resume":
          if (s.signal === null) return StepOutcome.fail("no go signal");
          return StepOutcome.succeed(enc(`${p.value ?? "resumed"}+${dec(s.signal)}`));
      }
    },
  };
}

function newLog() {
  return { childStarts: new Map<string, number>(), parentSteps: 0, failedOnce: new Set<string>() };
}

const stores: Array<[string, () => Promise<ObjectStore>]> = [
  ["MemoryStore", async () => new MemoryStore()],
  ["LocalStore", async () => new LocalStore(await tempDir())],
];

async function resultOf(env: Env, runId: string): Promise<string> {
  const end = await env.runtime.wait(runId);
  expect(end.termination.status, end.termination.error).toBe("succeeded");
  return dec(end.outcome?.result);
}

describe.each(stores)("child runs over a %s", (_name, makeStore) => {
  it("a parent waits for its children and resumes with each end once, in order", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log), { store: await makeStore() });
    try {
      await env.runtime.submit({
        runId: "p1",
        input: json({
          kind: "parent",
          wait: true,
          children: [
            { mode: "succeed", value: "a" },
            { mode: "fail", value: "nope" },
            { mode: "throw", value: "boom" },
          ],
        }),
      });
      const result = await resultOf(env, "p1");
      expect(result.split("|")).toEqual(["p1-s0-0:succeeded:a", "p1-s0-1:failed:runner:nope", "p1-s0-2:failed:permanent:boom"]);
      // Every child exists once and names no one else.
      expect([...log.childStarts.entries()].sort()).toEqual([
        ["p1-s0-0", 1],
        ["p1-s0-1", 1],
        ["p1-s0-2", 1],
      ]);
      // Nothing of the family's bookkeeping is left behind.
      await until(async () => (await env.queue.kvScan("workflow/signal-buf/")).entries.length === 0, "the child ends are consumed");
      expect((await env.queue.kvScan("workflow/children/")).entries).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("a step retried after starting its children finds them: each child exists once", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log), { store: await makeStore() });
    try {
      await env.runtime.submit({
        runId: "p2",
        input: json({
          kind: "parent",
          wait: true,
          failAfterStartOnce: true,
          children: [
            { key: "left", mode: "succeed", value: "L" },
            { key: "right", mode: "succeed", value: "R" },
          ],
        }),
      });
      // The retry waits out the step queue's backoff on the mock clock. The clock moves only while no
      // step runs (the parent's retry waits, neither child is claimed): a move during a step could outlast its lease.
      await until(async () => (await env.runtime.status("p2"))?.state !== "running" && log.parentSteps >= 1, "the first attempt ends");
      const idle = async (runId: string) => (await env.runtime.status(runId))?.state !== "running";
      await until(
        async () => {
          const s = await env.runtime.status("p2");
          if (s === null || s.state === "terminated" || s.step >= 1) return true;
          if (s.state === "pending" && (await idle("p2-s0-left")) && (await idle("p2-s0-right"))) env.clock.advance(1_000);
          return false;
        },
        "the retried first step continues",
        20_000,
      );
      expect(await resultOf(env, "p2")).toBe("p2-s0-left:succeeded:L|p2-s0-right:succeeded:R");
      expect(log.parentSteps).toBe(2);
      expect([...log.childStarts.values()]).toEqual([1, 1]);
      const page = await env.runtime.listRuns({ limit: 10 });
      expect(page.runs.map((r) => r.runId).sort()).toEqual(["p2", "p2-s0-left", "p2-s0-right"]);
      // Listings and histories show the link from each child to its parent.
      expect(page.runs.find((r) => r.runId === "p2-s0-left")?.parent).toEqual({ runId: "p2", step: 0 });
      expect(page.runs.find((r) => r.runId === "p2")?.parent).toBeUndefined();
      expect((await env.runtime.inspectRun("p2-s0-right"))?.parent).toEqual({ runId: "p2", step: 0 });
    } finally {
      await env.stop();
    }
  });

  it("a child cancelled from outside reaches its parent as cancelled", async () => {
    const env = await openEnv(familyRunner(newLog()), { store: await makeStore() });
    try {
      await env.runtime.submit({ runId: "p3", input: json({ kind: "parent", wait: true, children: [{ mode: "wait" }] }) });
      await until(
        async () => (await env.runtime.status("p3-s0-0"))?.state === "pending" && (await env.runtime.status("p3"))?.step === 1,
        "child and parent wait",
      );
      expect(await env.runtime.cancel("p3-s0-0")).toBe(true);
      expect(await resultOf(env, "p3")).toBe("p3-s0-0:cancelled:cancelled:");
    } finally {
      await env.stop();
    }
  });

  it("cancelling a parent cancels its running children, except those started to be abandoned", async () => {
    const env = await openEnv(familyRunner(newLog()), { store: await makeStore() });
    try {
      await env.runtime.submit({
        runId: "p4",
        input: json({ kind: "parent", wait: true, children: [{ mode: "wait" }, { mode: "wait", parentClose: "abandon" }] }),
      });
      await until(async () => (await env.runtime.status("p4"))?.step === 1 && (await env.runtime.status("p4-s0-1"))?.state === "pending", "the family waits");
      expect(await env.runtime.cancel("p4")).toBe(true);
      const child = await env.runtime.wait("p4-s0-0");
      expect(child.termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      expect((await env.runtime.status("p4-s0-1"))?.state).toBe("pending");
      // The abandoned child finishes on its own; its end has no one to go to and is dropped.
      await env.runtime.signal("go-p4-s0-1", enc("later"));
      expect(dec((await env.runtime.wait("p4-s0-1")).outcome?.result)).toBe("resumed+later");
      await until(async () => (await env.queue.kvScan("workflow/signal-buf/")).entries.length === 0, "the unread ends are dropped");
      expect((await env.queue.kvScan("workflow/children/")).entries).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("a parent that fails cancels its running children; one that succeeds leaves them running", async () => {
    const env = await openEnv(familyRunner(newLog()), { store: await makeStore() });
    try {
      await env.runtime.submit({ runId: "p5", input: json({ kind: "parent", wait: false, thenFail: true, children: [{ mode: "wait" }] }) });
      expect((await env.runtime.wait("p5")).termination.status).toBe("failed");
      expect((await env.runtime.wait("p5-s0-0")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });

      await env.runtime.submit({ runId: "p6", input: json({ kind: "parent", wait: false, children: [{ mode: "wait" }] }) });
      expect((await env.runtime.wait("p6")).termination.status).toBe("succeeded");
      expect((await env.runtime.status("p6-s0-0"))?.state).toBe("pending");
      await env.runtime.signal("go-p6-s0-0", enc("x"));
      expect((await env.runtime.wait("p6-s0-0")).termination.status).toBe("succeeded");
    } finally {
      await env.stop();
    }
  });

  it("a runtime's parentClose default applies to children whose start gives none; a start's own policy wins", async () => {
    const env = await openEnv(familyRunner(newLog()), { store: await makeStore(), configure: (b) => b.parentClose("abandon") });
    try {
      await env.runtime.submit({
        runId: "p9",
        input: json({ kind: "parent", wait: true, children: [{ mode: "wait" }, { mode: "wait", parentClose: "cancel" }] }),
      });
      await until(async () => (await env.runtime.status("p9"))?.step === 1 && (await env.runtime.status("p9-s0-1"))?.state === "pending", "the family waits");
      expect(await env.runtime.cancel("p9")).toBe(true);
      expect((await env.runtime.wait("p9-s0-1")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      // The default child is abandoned: it keeps running and ends on its own.
      expect((await env.runtime.status("p9-s0-0"))?.state).toBe("pending");
      await env.runtime.signal("go-p9-s0-0", enc("later"));
      expect(dec((await env.runtime.wait("p9-s0-0")).outcome?.result)).toBe("resumed+later");
    } finally {
      await env.stop();
    }
    await expect(openEnv(familyRunner(newLog()), { configure: (b) => b.parentClose("drop" as "cancel") })).rejects.toThrow(
      /parentClose must be "cancel" or "abandon"/,
    );
  });

  it("a failed child retried with retryRun reports its new end to its parent, which reads the latest", async () => {
    const env = await openEnv(familyRunner(newLog()), { store: await makeStore() });
    try {
      await env.runtime.submit({
        runId: "p8",
        input: json({ kind: "parent", wait: true, children: [{ mode: "wait" }, { mode: "failOnce", value: "fixed" }] }),
      });
      await until(
        async () => (await env.runtime.status("p8-s0-1"))?.state === "terminated" && (await env.runtime.status("p8"))?.step === 1,
        "the second child failed while the parent waits on the first",
      );
      expect((await env.runtime.wait("p8-s0-1")).termination.status).toBe("failed");
      await env.runtime.retryRun("p8-s0-1");
      expect(dec((await env.runtime.wait("p8-s0-1")).outcome?.result)).toBe("fixed");
      await env.runtime.signal("go-p8-s0-0", enc("go"));
      expect(await resultOf(env, "p8")).toBe("p8-s0-0:succeeded:resumed+go|p8-s0-1:succeeded:fixed");
    } finally {
      await env.stop();
    }
  });

  it("a child that ends while no worker runs reaches its waiting parent once after the restart", async () => {
    const store = await makeStore();
    const clock = new MockClock(1_700_000_000_000);
    const log = newLog();
    const first = await openEnv(familyRunner(log), { store, clock });
    await first.runtime.submit({ runId: "p7", input: json({ kind: "parent", wait: true, children: [{ mode: "wait", value: "v" }] }) });
    await until(async () => (await first.runtime.status("p7"))?.step === 1 && (await first.runtime.status("p7-s0-0"))?.state === "pending", "the family waits");
    await first.stop();

    // No worker: the signal wakes the child, which cannot run yet.
    const idle = await openEnv(familyRunner(log), { store, clock, start: false });
    expect(await idle.runtime.signal("go-p7-s0-0", enc("go"))).toBe("delivered");
    await idle.stop();

    const second = await openEnv(familyRunner(log), { store, clock });
    try {
      expect(await resultOf(second, "p7")).toBe("p7-s0-0:succeeded:v+go");
      expect(log.childStarts.get("p7-s0-0")).toBe(1);
      const history = await second.runtime.inspectRun("p7");
      expect(history?.steps.map((s) => s.attempts.map((a) => a.outcome))).toEqual([["continued"], ["succeeded"]]);
      expect(history?.steps[1]?.signal).toMatchObject({ key: "workflow.child/p7/p7-s0-0", result: "delivered" });
    } finally {
      await second.stop();
    }
  });
});

describe("child run starts", () => {
  it("refuse a bad key and a detached step, writing nothing", async () => {
    const env = await openEnv(
      {
        async runStep(s) {
          await s.children.start({ input: enc("x"), key: "no spaces" });
          return StepOutcome.succeed(enc(""));
        },
      },
      {},
    );
    try {
      await env.runtime.submit({ runId: "bad", input: enc("") });
      const end = await env.runtime.wait("bad");
      expect(end.termination.error).toMatch(/a child's key must be 1 to 64 characters/);
      expect((await env.queue.kvScan("workflow/children/")).entries).toEqual([]);
    } finally {
      await env.stop();
    }
    const { Step } = await import("taquba");
    await expect(Step.detached(enc("")).children.start({ input: enc("") })).rejects.toThrow(/detached step cannot start child runs/);
  });

  it("a bounded child wait enters the step with no signal, and waitedChild names the child it waited for", async () => {
    const seen: string[] = [];
    const env = await openEnv({
      async runStep(s) {
        const p = dec(s.payload);
        if (p === "parent") {
          seen.push(`start:${String(s.children.waitedChild())}`);
          const c = await s.children.start({ input: enc("child") });
          return StepOutcome.continueOnChild(enc("join"), c.completionKey, 5_000);
        }
        if (p === "join") {
          seen.push(`join:${s.signal === null ? "timed out" : "ended"}:${String(s.children.waitedChild())}`);
          return StepOutcome.succeed(enc(""));
        }
        return StepOutcome.continueOnSignal(enc("child-end"), `go-${s.runId}`, 3_600_000);
      },
    });
    try {
      await env.runtime.submit({ runId: "w", input: enc("parent") });
      await until(async () => (await env.runtime.status("w"))?.step === 1, "the parent waits");
      env.clock.advance(5_000);
      expect((await env.runtime.wait("w")).termination.status).toBe("succeeded");
      expect(seen).toEqual(["start:undefined", "join:timed out:w-s0-0"]);
      expect((await env.runtime.status("w-s0-0"))?.state).not.toBe("terminated");
    } finally {
      await env.stop();
    }
    const { Step } = await import("taquba");
    expect(Step.detached(enc("")).children.waitedChild()).toBeUndefined();
  });

  it("derive a hashed run id when the plain one would be too long, the same on every call", async () => {
    const { childRunId } = await import("../../runtime/workflow/children/child-runs.js");
    const long = "p".repeat(124);
    const a = childRunId(long, 3, "k");
    expect(a).toMatch(/^child-[0-9a-f]{48}$/);
    expect(childRunId(long, 3, "k")).toBe(a);
    expect(childRunId(long, 3, "j")).not.toBe(a);
    expect(childRunId("short", 3, "k")).toBe("short-s3-k");
  });
});
