/**
 * @module A parent run id submitted again after its run ended: the new run
 * starts children of its own instead of finding the earlier run's ended
 * ones, keeps them across retried deliveries, and leaves the earlier run's
 * children to that run's parent-close policy. Records written before runs
 * stored their submission resume with the children ids they had.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepError, StepOutcome, ValidationError, type Queue, type Step, type StepRunner } from "taquba";
import { decodeIndexEntry, encodeIndexEntry } from "../../runtime/workflow/runs/run-index.js";
import { decodeRunRecord, decodeTerminalRecord, encodeChildEntry, encodeRunRecord, encodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { encodeValue } from "../../runtime/workflow/records/codec.js";
import { HEADER_PARENT_ENDED, HEADER_PARENT_STATUS, HEADER_PARENT_SUBMISSION } from "../../runtime/workflow/records/reserved.js";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";

const Q = "workflow-steps";

type ChildSpec = { mode: "succeed" | "wait"; value?: string; parentClose?: "cancel" | "abandon" };
type Payload =
  | { kind: "parent"; children: ChildSpec[]; wait: boolean; failAfterStartOnce?: boolean; thenFail?: boolean }
  | { kind: "join"; keys: string[]; got: string[] }
  | { kind: "child"; mode: ChildSpec["mode"]; value?: string }
  | { kind: "child-resume"; value?: string };

const json = (p: Payload) => enc(JSON.stringify(p));

interface Log {
  /** Deliveries of each child's first step, by run id. */
  childStarts: Map<string, number>;
  /** Parent runs whose first step already failed once after starting its children (by input, so a new run fails again). */
  failedOnce: Set<string>;
}

const newLog = (): Log => ({ childStarts: new Map(), failedOnce: new Set() });

/** Parents that start children and join their ends; children that succeed or wait for a `go-<run>` signal. */
function familyRunner(log: Log): StepRunner {
  return {
    async runStep(s: Step) {
      const p = JSON.parse(dec(s.payload)) as Payload;
      switch (p.kind) {
        case "parent": {
          const keys: string[] = [];
          for (const c of p.children) {
            const started = await s.children.start({
              input: json({ kind: "child", mode: c.mode, ...(c.value === undefined ? {} : { value: c.value }) }),
              ...(c.parentClose === undefined ? {} : { parentClose: c.parentClose }),
            });
            keys.push(started.completionKey);
          }
          const once = `${s.runId}:${dec(s.payload)}`;
          if (p.failAfterStartOnce === true && !log.failedOnce.has(once)) {
            log.failedOnce.add(once);
            throw StepError.transient(new Error("fails once after starting its children"));
          }
          if (p.thenFail === true) throw StepError.permanent(new Error("the parent fails while its children run"));
          if (!p.wait) return StepOutcome.succeed(enc(keys.join(",")));
          const [first, ...rest] = keys;
          return StepOutcome.continueOnChild(json({ kind: "join", keys: rest, got: [] }), first!);
        }
        case "join": {
          const o = await s.children.outcome(s.signal as Uint8Array);
          const got = [...p.got, `${o.runId}:${o.status}:${o.status === "succeeded" ? dec(o.result) : (o.errorKind ?? "")}`];
          const [next, ...rest] = p.keys;
          if (next === undefined) return StepOutcome.succeed(enc(got.join("|")));
          return StepOutcome.continueOnChild(json({ kind: "join", keys: rest, got }), next);
        }
        case "child":
          log.childStarts.set(s.runId, (log.childStarts.get(s.runId) ?? 0) + 1);
          if (p.mode === "succeed") return StepOutcome.succeed(enc(p.value ?? "ok"));
          return StepOutcome.continueOnSignal(json({ kind: "child-resume", ...(p.value === undefined ? {} : { value: p.value }) }), `go-${s.runId}`, 3_600_000);
        case "child-resume":
          return StepOutcome.succeed(enc(`${p.value ?? "resumed"}+${dec(s.signal)}`));
      }
    },
  };
}

/** Run "p" of the earlier submission succeeds while its child (value "old") still runs; with `settled`, once its children are no longer listed. */
async function earlierRunLeavesChildRunning(env: Env, settled: boolean): Promise<void> {
  await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: false, children: [{ mode: "wait", value: "old" }] }) });
  expect((await env.runtime.wait("p")).termination.status).toBe("succeeded");
  if (settled) await until(async () => (await env.queue.kvScan("workflow/children/")).entries.length === 0, "the earlier run's children are settled");
}

async function resultOf(env: Env, runId: string): Promise<string> {
  const end = await env.runtime.wait(runId);
  expect(end.termination.status, end.termination.error).toBe("succeeded");
  return dec(end.outcome?.result);
}

/**
 * Waits until the retried first step of run "p" continued (to step 1, or
 * on past it), moving the mock clock past the step queue's backoff only
 * while step 0 waits for it: a move while a step runs could outlast its
 * lease, and one once the run waits for its children could time out their
 * signal waits.
 */
async function retried(env: Env, clock: MockClock, what: string): Promise<void> {
  await until(
    async () => {
      const s = await env.runtime.status("p");
      if (s === null || s.step >= 1) return true;
      if (s.state === "pending") clock.advance(1_000);
      return false;
    },
    what,
    20_000,
  );
}

/** Rewrites every run record, terminal record and index entry as a version before runs stored their submission (or memo set) wrote it. */
async function dropSubmissions(queue: Queue): Promise<void> {
  for (const e of (await queue.kvScan(`workflow/runs/${Q}/`)).entries) {
    const { submission: _s, memoSet: _m, parent, ...older } = decodeRunRecord(e.value, e.key);
    const { submission: _p, ...olderParent } = parent ?? { runId: "", step: 0 };
    await queue.kvPut(e.key, encodeRunRecord({ ...older, ...(parent === undefined ? {} : { parent: olderParent }) }));
  }
  for (const e of (await queue.kvScan(`workflow/outcomes/${Q}/`)).entries) {
    const { submission: _s, ...older } = decodeTerminalRecord(e.value, e.key);
    await queue.kvPut(e.key, encodeTerminalRecord(older));
  }
  for (const e of (await queue.kvScan(`workflow/run-index/${Q}/`)).entries) {
    const { submission: _s, memoSet: _m, parent, ...older } = decodeIndexEntry(e.value, e.key);
    const { submission: _p, ...olderParent } = parent ?? { runId: "", step: 0 };
    await queue.kvPut(e.key, encodeIndexEntry({ ...older, ...(parent === undefined ? {} : { parent: olderParent }) }));
  }
}

const SECOND_ID = /^p-s0-0-p[0-9A-Za-z]+$/;

describe("a parent run id submitted again after its end", () => {
  it("starts children of its own, also within the same millisecond, and leaves the earlier ones as they ended", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log));
    try {
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "succeed", value: "first" }] }) });
      expect(await resultOf(env, "p")).toBe("p-s0-0:succeeded:first");
      // The clock has not moved: the new run is told apart by its stored submission, not by time.
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "succeed", value: "second" }] }) });
      const [second] = (await resultOf(env, "p")).split(":");
      expect(second).toMatch(SECOND_ID);
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "succeed", value: "third" }] }) });
      const third = await resultOf(env, "p");
      expect(third).toMatch(/^p-s0-0-p[0-9A-Za-z]+:succeeded:third$/);
      expect(third.split(":")[0]).not.toBe(second);
      // Three children, each run once; the first run's child still holds its own end.
      expect([...log.childStarts.values()]).toEqual([1, 1, 1]);
      expect(dec((await env.runtime.outcome("p-s0-0"))?.result)).toBe("first");
      expect((await env.runtime.inspectRun(second!))?.parent).toEqual({ runId: "p", step: 0 });
      await until(async () => (await env.queue.kvScan("workflow/signal-buf/")).entries.length === 0, "the child ends are consumed");
      expect((await env.queue.kvScan("workflow/children/")).entries).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("keeps the children it started across a retried delivery, even once the earlier run's child is gone", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log));
    try {
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "succeed", value: "a" }] }) });
      expect(await resultOf(env, "p")).toBe("p-s0-0:succeeded:a");
      const input = json({ kind: "parent", wait: true, failAfterStartOnce: true, children: [{ mode: "wait", value: "b" }] });
      await env.runtime.submit({ runId: "p", input });
      await until(async () => log.childStarts.size === 2, "the new run's child starts");
      const mine = [...log.childStarts.keys()].find((id) => id !== "p-s0-0")!;
      expect(mine).toMatch(SECOND_ID);
      // The earlier run's child goes before the retry: the retry still finds the child it started, not the free first id.
      await env.runtime.memoStore.clearMemosForRun("p-s0-0");
      await env.queue.kvDelete(`workflow/outcomes/${Q}/p-s0-0`);
      expect(await env.runtime.status("p-s0-0")).toBeNull();
      await retried(env, env.clock, "the retried step waits for its child");
      await env.runtime.signal(`go-${mine}`, enc("go"));
      expect(await resultOf(env, "p")).toBe(`${mine}:succeeded:b+go`);
      expect(log.childStarts.get(mine)).toBe(1);
      expect(await env.runtime.status("p-s0-0")).toBeNull();
      expect((await env.runtime.listRuns({ limit: 10 })).runs.map((r) => r.runId).sort()).toEqual(["p", mine]);
    } finally {
      await env.stop();
    }
  });

  it("starts its own child beside a running child of the earlier run, which its own failure leaves running", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log));
    try {
      // The earlier run succeeds with its child still running (a success leaves children running).
      await earlierRunLeavesChildRunning(env, true);
      expect((await env.runtime.status("p-s0-0"))?.state).toBe("pending");
      // The new run starts its own child, then fails: that cancels its own child only.
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: false, thenFail: true, children: [{ mode: "wait", value: "new" }] }) });
      expect((await env.runtime.wait("p")).termination.status).toBe("failed");
      const mine = [...log.childStarts.keys()].find((id) => id !== "p-s0-0")!;
      expect(mine).toMatch(SECOND_ID);
      expect((await env.runtime.wait(mine)).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      expect((await env.runtime.status("p-s0-0"))?.state).toBe("pending");
      // The earlier child ends on its own; its end goes to no one and is dropped.
      expect(await env.runtime.signal("go-p-s0-0", enc("late"))).toBe("delivered");
      expect(dec((await env.runtime.wait("p-s0-0")).outcome?.result)).toBe("old+late");
      await until(async () => (await env.queue.kvScan("workflow/signal-buf/")).entries.length === 0, "the unread end is dropped");
      expect((await env.queue.kvScan("workflow/children/")).entries).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("drops the end of the earlier run's child at once while the new run waits for its own", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log));
    try {
      await earlierRunLeavesChildRunning(env, false);
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "wait", value: "new" }] }) });
      await until(async () => (await env.runtime.status("p"))?.step === 1, "the new run waits for its child");
      const mine = [...log.childStarts.keys()].find((id) => id !== "p-s0-0")!;
      expect(await env.runtime.signal("go-p-s0-0", enc("late"))).toBe("delivered");
      expect(dec((await env.runtime.wait("p-s0-0")).outcome?.result)).toBe("old+late");
      // No run will read it: dropped while the new run still waits, not kept until that run ends.
      await until(async () => (await env.queue.kvScan("workflow/signal-buf/")).entries.length === 0, "the earlier child's end is dropped");
      expect((await env.runtime.status("p"))?.step).toBe(1);
      await env.runtime.signal(`go-${mine}`, enc("go"));
      expect(await resultOf(env, "p")).toBe(`${mine}:succeeded:new+go`);
    } finally {
      await env.stop();
    }
  });

  it("lets the earlier run's late parent-close job settle that run's children only", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log));
    try {
      await earlierRunLeavesChildRunning(env, true);
      // As if that run had failed and its parent-close job had not run yet: its running child is listed again.
      await env.queue.kvPut(`workflow/children/${Q}/p/p-s0-0`, encodeChildEntry({ parentClose: "cancel" }));
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "wait", value: "new" }] }) });
      await until(async () => (await env.runtime.status("p"))?.step === 1, "the new run waits for its child");
      const mine = [...log.childStarts.keys()].find((id) => id !== "p-s0-0")!;
      expect(mine).toMatch(SECOND_ID);
      // The earlier run's parent-close job, delivered now.
      await env.queue.enqueue(Q, encodeValue("failed"), { headers: { [HEADER_PARENT_ENDED]: "p" } });
      expect((await env.runtime.wait("p-s0-0")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      const left = (await env.queue.kvScan("workflow/children/")).entries.map((e) => e.key);
      expect(left).toEqual([`workflow/children/${Q}/p/${mine}`]);
      expect((await env.runtime.status(mine))?.state).toBe("pending");
      await env.runtime.signal(`go-${mine}`, enc("go"));
      expect(await resultOf(env, "p")).toBe(`${mine}:succeeded:new+go`);
    } finally {
      await env.stop();
    }
  });

  it("an earlier run's parent-close job that comes after the new run ended too: each run's children get their own run's policy", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log));
    let worker = env.worker!;
    try {
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "wait", value: "old" }] }) });
      await until(async () => (await env.runtime.status("p"))?.step === 1 && (await env.runtime.status("p-s0-0"))?.step === 1, "the family waits");
      // No worker: the earlier run is cancelled, and its parent-close job is held (claimed) until the new run ended.
      await worker.shutdown();
      expect(await env.runtime.cancel("p")).toBe(true);
      const claimed = [];
      for (let j = await env.queue.claim(Q, 60_000); j !== null; j = await env.queue.claim(Q, 60_000)) claimed.push(j);
      const late = claimed.find((j) => j.headers[HEADER_PARENT_ENDED] !== undefined)!;
      for (const j of claimed) if (j !== late) env.queue.releaseClaim(j);
      const first = decodeTerminalRecord((await env.queue.kvGet(`workflow/outcomes/${Q}/p`))!, "p").submission!;
      expect(late.headers[HEADER_PARENT_SUBMISSION], "the job names the run that ended").toBe(first);
      expect(late.headers[HEADER_PARENT_STATUS], "and how it ended, for a reconciliation that reads headers only").toBe("cancelled");
      worker = env.runtime.spawn();

      // The new run succeeds with its own child still running, and its parent-close job runs first.
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: false, children: [{ mode: "wait", value: "new" }] }) });
      expect((await env.runtime.wait("p")).termination.status).toBe("succeeded");
      const mine = [...log.childStarts.keys()].find((id) => id !== "p-s0-0")!;
      expect(mine).toMatch(SECOND_ID);
      await until(async () => (await env.queue.kvGet(`workflow/children/${Q}/p/${mine}`)) === null, "the new run's children are settled");
      // The new run's success is not the earlier run's end: that run's child is still listed, for its own job.
      expect((await env.queue.kvScan("workflow/children/")).entries.map((e) => e.key)).toEqual([`workflow/children/${Q}/p/p-s0-0`]);
      expect((await env.runtime.status("p-s0-0"))?.state).toBe("pending");

      // The earlier run's parent-close job goes on: the cancel reaches its own child, not the new run's.
      env.queue.releaseClaim(late);
      expect((await env.runtime.wait("p-s0-0")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      expect((await env.runtime.status(mine))?.state).toBe("pending");
      await until(async () => (await env.queue.kvScan("workflow/children/")).entries.length === 0, "the earlier run's children are settled");
    } finally {
      await worker.shutdown();
      await env.queue.close();
    }
  });

  it("an earlier run's parent-close job dead-lettered while the new run runs: reconciliation still cancels that run's children only", async () => {
    const log = newLog();
    const clock = new MockClock(1_700_000_000_000);
    // The queue logs the dead-letter this test causes on purpose.
    const quiet = { queueOptions: { logger: { error: () => undefined } } };
    const env = await openEnv(familyRunner(log), { clock, ...quiet });
    await env.runtime.submit({
      runId: "p",
      input: json({ kind: "parent", wait: true, children: [{ mode: "wait", value: "old" }] }),
      options: { maxAttemptsPerStep: 1 },
    });
    await until(async () => (await env.runtime.status("p"))?.step === 1 && (await env.runtime.status("p-s0-0"))?.step === 1, "the family waits");
    await env.worker?.shutdown();
    // No worker: the earlier run is cancelled, and the job that would cancel its child dies.
    expect(await env.runtime.cancel("p")).toBe(true);
    const claimed = [];
    for (let j = await env.queue.claim(Q, 1000); j !== null; j = await env.queue.claim(Q, 1000)) claimed.push(j);
    const late = claimed.find((j) => j.headers[HEADER_PARENT_ENDED] !== undefined)!;
    for (const j of claimed) if (j !== late) env.queue.releaseClaim(j);
    clock.advance(2000);
    await env.queue.runMaintenance();
    expect((await env.queue.view().job(late.id))?.state).toBe("dead");
    // The new run is submitted before any reconciliation: it is active when the dead job is reconciled.
    await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "wait", value: "new" }] }) });
    await env.queue.close();

    const next = await openEnv(familyRunner(log), { clock, store: env.store, ...quiet });
    try {
      await until(async () => (await next.runtime.status("p-s0-0"))?.state === "terminated", "the earlier run's child is cancelled", 3000).catch(
        () => undefined,
      );
      expect(await next.runtime.status("p-s0-0"), "the child of the cancelled earlier run").toMatchObject({ state: "terminated", status: "cancelled" });
      await until(async () => (await next.runtime.status("p"))?.step === 1, "the new run waits for its child");
      const mine = [...log.childStarts.keys()].find((id) => id !== "p-s0-0")!;
      expect(mine).toMatch(SECOND_ID);
      expect((await next.runtime.status(mine))?.state).toBe("pending");
      await next.runtime.signal(`go-${mine}`, enc("go"));
      expect(await resultOf(next, "p")).toBe(`${mine}:succeeded:new+go`);
      await until(async () => (await next.queue.kvScan("workflow/children/")).entries.length === 0, "no child is left listed");
    } finally {
      await next.stop();
    }
  });

  it("an earlier run's failure, settled after the new run ended, does not cancel the children the new run's success left running", async () => {
    const log = newLog();
    const env = await openEnv(familyRunner(log));
    try {
      await earlierRunLeavesChildRunning(env, true);
      const first = decodeTerminalRecord((await env.queue.kvGet(`workflow/outcomes/${Q}/p`))!, "p").submission!;
      await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: false, children: [{ mode: "wait", value: "new" }] }) });
      expect((await env.runtime.wait("p")).termination.status).toBe("succeeded");
      const mine = [...log.childStarts.keys()].find((id) => id !== "p-s0-0")!;
      await until(async () => (await env.queue.kvScan("workflow/children/")).entries.length === 0, "the new run's children are settled");
      // As if the earlier run had failed and neither parent-close job had run yet: both children listed.
      await env.queue.kvPut(`workflow/children/${Q}/p/p-s0-0`, encodeChildEntry({ parentClose: "cancel" }));
      await env.queue.kvPut(`workflow/children/${Q}/p/${mine}`, encodeChildEntry({ parentClose: "cancel" }));
      await env.queue.enqueue(Q, encodeValue("failed"), { headers: { [HEADER_PARENT_ENDED]: "p", [HEADER_PARENT_SUBMISSION]: first } });
      expect((await env.runtime.wait("p-s0-0")).termination).toMatchObject({ status: "cancelled", errorKind: "cancelled" });
      expect((await env.runtime.status(mine))?.state).toBe("pending");
      expect((await env.queue.kvScan("workflow/children/")).entries.map((e) => e.key)).toEqual([`workflow/children/${Q}/p/${mine}`]);
    } finally {
      await env.stop();
    }
  });

  it("written by an earlier version (no stored submission) gets a child of its own beside the earlier run's", async () => {
    const log = newLog();
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const env = await openEnv(familyRunner(log), { store, clock });
    await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "succeed", value: "first" }] }) });
    expect(await resultOf(env, "p")).toBe("p-s0-0:succeeded:first");
    await env.stop();
    const legacy = await openEnv(familyRunner(log), { store, clock, start: false });
    await dropSubmissions(legacy.queue);
    await legacy.stop();
    clock.advance(1);
    const next = await openEnv(familyRunner(log), { store, clock });
    try {
      await next.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, children: [{ mode: "succeed", value: "second" }] }) });
      expect(await resultOf(next, "p")).toMatch(/^p-s0-0-p[0-9A-Za-z]+:succeeded:second$/);
      expect(log.childStarts.size).toBe(2);
    } finally {
      await next.stop();
    }
  });
});

describe("a parent run resumed over records of an earlier version", () => {
  it("finds the children it started under the ids that version gave them", async () => {
    const log = newLog();
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const env = await openEnv(familyRunner(log), { store, clock });
    const input = json({
      kind: "parent",
      wait: true,
      failAfterStartOnce: true,
      children: [
        { mode: "succeed", value: "a" },
        { mode: "wait", value: "b" },
      ],
    });
    await env.runtime.submit({ runId: "p", input });
    await until(
      async () => log.childStarts.size === 2 && (await env.runtime.status("p"))?.state !== "running",
      "the first delivery started both children and failed",
    );
    await env.stop();
    // As an earlier version left them: the parent and its children name no submission.
    const legacy = await openEnv(familyRunner(log), { store, clock, start: false });
    await dropSubmissions(legacy.queue);
    expect(decodeRunRecord((await legacy.queue.kvGet(`workflow/runs/${Q}/p`))!, "p").submission).toBeUndefined();
    await legacy.stop();
    const next = await openEnv(familyRunner(log), { store, clock });
    try {
      await retried(next, clock, "the retried step waits for its children");
      await next.runtime.signal("go-p-s0-1", enc("go"));
      expect(await resultOf(next, "p")).toBe("p-s0-0:succeeded:a|p-s0-1:succeeded:b+go");
      expect([...log.childStarts.entries()].sort()).toEqual([
        ["p-s0-0", 1],
        ["p-s0-1", 1],
      ]);
    } finally {
      await next.stop();
    }
  });

  it("finds a child that an earlier version started for it (the child names no submission of its parent)", async () => {
    const log = newLog();
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const env = await openEnv(familyRunner(log), { store, clock });
    await env.runtime.submit({ runId: "p", input: json({ kind: "parent", wait: true, failAfterStartOnce: true, children: [{ mode: "wait", value: "a" }] }) });
    await until(
      async () => log.childStarts.size === 1 && (await env.runtime.status("p"))?.state !== "running",
      "the first delivery started the child and failed",
    );
    await env.stop();
    // A rolling upgrade: this version submitted the parent, an earlier one started its child.
    const legacy = await openEnv(familyRunner(log), { store, clock, start: false });
    const parentKey = `workflow/runs/${Q}/p`;
    const parent = (await legacy.queue.kvGet(parentKey))!;
    await dropSubmissions(legacy.queue);
    await legacy.queue.kvPut(parentKey, parent);
    expect(decodeRunRecord(parent, parentKey).submission).toBeDefined();
    await legacy.stop();
    const next = await openEnv(familyRunner(log), { store, clock });
    try {
      await retried(next, clock, "the retried step waits for its child");
      await next.runtime.signal("go-p-s0-0", enc("go"));
      expect(await resultOf(next, "p")).toBe("p-s0-0:succeeded:a+go");
      expect([...log.childStarts.entries()]).toEqual([["p-s0-0", 1]]);
    } finally {
      await next.stop();
    }
  });
});

describe("a child key that ends with the run's own submission", () => {
  it("is refused, so it never names the child that another key of the step got under its second id", async () => {
    const seen: Array<string> = [];
    const env: Env = await openEnv({
      async runStep(s: Step) {
        if (dec(s.payload) !== "parent") return StepOutcome.succeed(enc("child"));
        // The run's submission, as `inspectRun` reports it.
        const submission = (await env.runtime.inspectRun(s.runId))?.submission;
        const odd = await s.children.start({ input: enc("c"), key: `a-p${submission}` }).then(
          (c) => c.runId as string,
          (e: unknown) => (e instanceof ValidationError ? `refused: ${e.message}` : `other: ${String(e)}`),
        );
        const plain = await s.children.start({ input: enc("c"), key: "a" });
        seen.push(odd, plain.runId);
        return StepOutcome.succeed(enc("ok"));
      },
    });
    try {
      const submitted = await env.runtime.submit({ runId: "p", input: enc("parent") });
      expect((await env.runtime.wait("p")).termination.status).toBe("succeeded");
      const [odd, plain] = seen;
      expect(plain).toBe("p-s0-a");
      expect(odd).toMatch(/^refused: a child's key may not end with "-p" and this run's submission/);
      const submission = (await env.runtime.inspectRun("p"))?.submission;
      expect(submission).toMatch(/^[0-9A-Z]{26}$/);
      // Drawn at submission: not step 0's job id.
      expect(submission).not.toBe(submitted.jobId);
      expect(odd).toContain(submission);
    } finally {
      await env.stop();
    }
  });
});

describe("childRunId with a parent's submission", () => {
  it("appends it to the first id, hashes the parts when too long, and refuses a submission no run id could carry", async () => {
    const { childRunId } = await import("../../runtime/workflow/children/child-runs.js");
    const { ValidationError } = await import("taquba");
    expect(childRunId("p", 2, "k", undefined, "01ABC")).toBe("p-s2-k-p01ABC");
    expect(childRunId("p", 2, "k", undefined, "01ABD")).not.toBe(childRunId("p", 2, "k", undefined, "01ABC"));
    const long = "p".repeat(100);
    const hashed = childRunId(long, 3, "k", undefined, "01M8TW5V4G41EKCG1ZXV1VRWJ4");
    expect(hashed).toMatch(/^child-[0-9a-f]{48}$/);
    expect(childRunId(long, 3, "k", undefined, "01M8TW5V4G41EKCG1ZXV1VRWJ4")).toBe(hashed);
    expect(childRunId(long, 3, "k")).toBe(`${long}-s3-k`);
    for (const bad of ["", "a/b", "x".repeat(129), 7 as unknown as string]) {
      expect(() => childRunId("p", 0, "0", undefined, bad)).toThrow(ValidationError);
    }
  });
});
