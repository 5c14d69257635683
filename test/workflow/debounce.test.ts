/**
 * @module Debounced runs (`RunOptions.debounce`): the last submission of a
 * key within the window runs; the runs it replaced end cancelled with
 * `errorKind: "superseded"` and the run that replaced them, in the
 * replacing submission's own commit, never run a step, and say so after a
 * crash and a restart. A run whose first step started is not replaced.
 * Memory and Local stores; time is a `MockClock`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, MockClock, RunNotRetryableError, StepOutcome, ValidationError, type ObjectStore, type StepRunner } from "taquba";
import { withFaults } from "../../runtime/store/with-faults.js";
import { dec, enc, openEnv, recordingHook, settle, until } from "./helpers.js";

const PERIOD = 1000;
const T0 = 1_700_000_000_000;

/** A one-step runner that records every input it ran. */
function recordingRunner(): StepRunner & { ran: string[] } {
  const ran: string[] = [];
  return {
    ran,
    async runStep(s) {
      ran.push(dec(s.payload));
      return StepOutcome.succeed(s.payload);
    },
  };
}

const debounce = { key: "report:acme", periodMs: PERIOD };

async function keepsTheLastInput(store: ObjectStore): Promise<void> {
  const clock = new MockClock(T0);
  const runner = recordingRunner();
  const hook = recordingHook();
  // The first owner never closes: the second opens the store as after a crash.
  const first = await openEnv(runner, { store, clock, hook, start: false });
  await first.runtime.submit({ runId: "a", input: enc("a"), options: { debounce } });
  const waitA = first.runtime.wait("a");
  clock.advance(300);
  const b = await first.runtime.submit({ runId: "b", input: enc("b"), options: { debounce } });
  expect(b.newlySubmitted).toBe(true);
  const endA = await waitA;
  expect(endA.termination).toMatchObject({ runId: "a", status: "cancelled", errorKind: "superseded", supersededBy: "b", finalStep: 0 });
  expect(endA.termination.error).toContain('superseded by run b: a later submission with debounce key "report:acme"');
  // Another key is a window of its own.
  await first.runtime.submit({ runId: "g", input: enc("g"), options: { debounce: { key: "report:globex", periodMs: PERIOD } } });

  const env = await openEnv(runner, { store, clock, hook });
  await first.queue.close().catch(() => undefined); // fenced by the second owner: it can no longer commit
  clock.advance(300);
  await env.runtime.submit({ runId: "c", input: enc("c"), options: { debounce } });
  expect((await env.runtime.status("b"))?.state).toBe("terminated");
  const listed = (await env.runtime.listRuns({})).runs;
  expect(listed.find((r) => r.runId === "a")?.state).toBe("cancelled");
  expect(listed.find((r) => r.runId === "b")?.state).toBe("cancelled");
  expect(listed.find((r) => r.runId === "c")?.heldBy).toEqual({ reason: "debounced", key: "report:acme", until: T0 + PERIOD });
  // The window ends a period after its first submission; only then does the last run start.
  await settle();
  expect(runner.ran).toEqual([]);
  clock.advance(PERIOD);
  expect((await env.runtime.wait("c")).termination.status).toBe("succeeded");
  expect((await env.runtime.wait("g")).termination.status).toBe("succeeded");
  expect(runner.ran.sort()).toEqual(["c", "g"]);
  await env.stop();

  // After a restart the superseded runs still say by whom.
  const again = await openEnv(runner, { store, clock, start: false });
  expect((await again.runtime.wait("a")).termination).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: "b" });
  expect(await again.runtime.status("b")).toMatchObject({ state: "terminated", status: "cancelled", errorKind: "superseded", supersededBy: "c" });
  const inspected = await again.runtime.inspectRun("b");
  expect(inspected?.end).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: "c" });
  expect((await again.runtime.listRuns({})).runs.find((r) => r.runId === "b")).toMatchObject({ errorKind: "superseded", supersededBy: "c" });
  await again.stop();
  // The terminal hook sees each superseded run's end once, with the run that replaced it.
  expect(hook.seen.filter((o) => o.errorKind === "superseded").map((o) => [o.runId, o.supersededBy])).toEqual([
    ["a", "b"],
    ["b", "c"],
  ]);
}

describe("debounced runs", () => {
  it("keeps the last input of a window, over a memory store, across a crash and a restart", async () => {
    await keepsTheLastInput(new MemoryStore());
  });

  it("keeps the last input of a window over a local store", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taquba-debounce-"));
    try {
      await keepsTheLastInput(new LocalStore(dir));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a replacing submission whose commit fails ends no run: after a restart the replaced run still waits, and the next submission replaces it", async () => {
    const clock = new MockClock(T0);
    const inner = new MemoryStore();
    const faults = withFaults(inner, { failureRate: 0, seed: 1, ops: ["put"], failAfterWriteRate: 0 });
    const runner = recordingRunner();
    const first = await openEnv(runner, { store: faults, clock, start: false, queueOptions: { logger: { error: () => undefined, warn: () => undefined } } });
    await first.runtime.submit({ runId: "a", input: enc("a"), options: { debounce } });
    faults.failureRate = 1;
    await expect(first.runtime.submit({ runId: "b", input: enc("b"), options: { debounce } })).rejects.toThrow();
    faults.failureRate = 0;
    await first.queue.close().catch(() => undefined);

    const env = await openEnv(runner, { store: inner, clock });
    expect((await env.runtime.status("a"))?.state).toBe("pending");
    expect(await env.runtime.status("b")).toBeNull();
    await env.runtime.submit({ runId: "c", input: enc("c"), options: { debounce } });
    expect((await env.runtime.wait("a")).termination).toMatchObject({ errorKind: "superseded", supersededBy: "c" });
    clock.advance(PERIOD);
    expect((await env.runtime.wait("c")).termination.status).toBe("succeeded");
    expect(runner.ran).toEqual(["c"]);
    await env.stop();
  });

  it("never replaces a run whose first step started: the next submission opens a new window", async () => {
    const clock = new MockClock(T0);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran: string[] = [];
    const env = await openEnv(
      {
        async runStep(s) {
          ran.push(dec(s.payload));
          if (dec(s.payload) === "a") await gate;
          return StepOutcome.succeed(s.payload);
        },
      },
      { clock },
    );
    await env.runtime.submit({ runId: "a", input: enc("a"), options: { debounce } });
    clock.advance(PERIOD);
    await until(() => ran.includes("a"), "a's first step started");
    const b = await env.runtime.submit({ runId: "b", input: enc("b"), options: { debounce } });
    expect(b.newlySubmitted).toBe(true);
    release();
    expect((await env.runtime.wait("a")).termination.status).toBe("succeeded");
    expect((await env.runtime.status("b"))?.state).toBe("pending");
    clock.advance(PERIOD);
    expect((await env.runtime.wait("b")).termination.status).toBe("succeeded");
    expect(ran).toEqual(["a", "b"]);
    await env.stop();
  });

  it("lets exactly the last of many concurrent submissions of a key run; every other one names the run that replaced it", async () => {
    const clock = new MockClock(T0);
    const runner = recordingRunner();
    const env = await openEnv(runner, { clock });
    const ids = Array.from({ length: 20 }, (_, i) => `r${String(i).padStart(2, "0")}`);
    await Promise.all(ids.map((id) => env.runtime.submit({ runId: id, input: enc(id), options: { debounce } })));
    const ends = new Map<string, string | undefined>();
    for (const id of ids) {
      const s = await env.runtime.status(id);
      if (s?.state === "terminated") {
        expect(s).toMatchObject({ status: "cancelled", errorKind: "superseded" });
        ends.set(id, s.supersededBy);
      }
    }
    const alive = ids.filter((id) => !ends.has(id));
    expect(alive).toHaveLength(1);
    // The replacements form one chain ending at the run that lives.
    const replacedBy = new Set(ends.values());
    expect(ids.filter((id) => !replacedBy.has(id))).toHaveLength(1);
    clock.advance(PERIOD);
    expect((await env.runtime.wait(alive[0]!)).termination.status).toBe("succeeded");
    await settle();
    expect(runner.ran).toEqual(alive);
    await env.stop();
  });

  it("refuses to retry a superseded run, naming the run that replaced it, and changes nothing", async () => {
    const clock = new MockClock(T0);
    const runner = recordingRunner();
    const env = await openEnv(runner, { clock });
    try {
      await env.runtime.submit({ runId: "a", input: enc("a"), options: { debounce } });
      await env.runtime.submit({ runId: "b", input: enc("b"), options: { debounce } });
      expect(await env.runtime.status("a")).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: "b" });
      const err = await env.runtime.retryRun("a").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RunNotRetryableError);
      expect(err).toMatchObject({ reason: "superseded", runId: "a" });
      expect((err as Error).message).toMatch(/superseded by run "b".*retry or submit run "b" instead/);
      // Nothing changed: "a" stays superseded, "b" still waits out its window and runs once.
      expect(await env.runtime.status("a")).toMatchObject({ state: "terminated", status: "cancelled", supersededBy: "b" });
      expect((await env.runtime.inspectRun("a"))?.redrives ?? []).toEqual([]);
      expect((await env.runtime.status("b"))?.state).toBe("pending");
      clock.advance(PERIOD);
      expect((await env.runtime.wait("b")).termination.status).toBe("succeeded");
      await settle();
      expect(runner.ran).toEqual(["b"]);
    } finally {
      await env.stop();
    }
  });

  it("refuses a malformed debounce before writing anything", async () => {
    const env = await openEnv(recordingRunner(), { start: false });
    const bad: unknown[] = [
      null,
      { key: "k", periodMs: Number.NaN },
      { key: "k", periodMs: -1 },
      { key: "k", periodMs: 0 },
      { key: "k", periodMs: 1e30 },
      { key: "k", periodMs: Number.POSITIVE_INFINITY },
      { key: "k", periodMs: 1.5 },
      { key: "", periodMs: PERIOD },
      { key: "x".repeat(513), periodMs: PERIOD },
      { periodMs: PERIOD },
    ];
    for (const d of bad) {
      await expect(env.runtime.submit({ runId: "x", input: enc("x"), options: { debounce: d as never } }), JSON.stringify(d)).rejects.toBeInstanceOf(
        ValidationError,
      );
    }
    await expect(env.runtime.submit({ runId: "x", input: enc("x"), options: { debounce, runAt: T0 + 5 } })).rejects.toThrow(/cannot be combined with runAt/);
    // A group's members share one set of options: they would replace each other.
    await expect(env.runtime.group("g").submit([{ key: "m", input: enc("m") }], { debounce })).rejects.toThrow(/cannot be debounced/);
    expect(await env.runtime.status("x")).toBeNull();
    expect((await env.queue.view().stats("workflow-steps")).scheduled).toBe(0);
    await env.stop();
  });

  it("orders runs by their submission's priority, a debounced run keeping its own", async () => {
    const clock = new MockClock(T0);
    const runner = recordingRunner();
    const env = await openEnv(runner, { clock, start: false, configure: (b) => b.maxConcurrentSteps(1) });
    await env.runtime.submit({ runId: "low", input: enc("low"), options: { priority: 10_000 } });
    await env.runtime.submit({ runId: "normal", input: enc("normal") });
    await env.runtime.submit({ runId: "high", input: enc("high"), options: { priority: 100 } });
    await env.runtime.submit({ runId: "urgent", input: enc("urgent"), options: { priority: 1, debounce } });
    clock.advance(PERIOD);
    const worker = env.runtime.spawn();
    for (const id of ["low", "normal", "high", "urgent"]) await env.runtime.wait(id);
    expect(runner.ran).toEqual(["urgent", "high", "normal", "low"]);
    await worker.shutdown();
    await env.stop();
  });
});
