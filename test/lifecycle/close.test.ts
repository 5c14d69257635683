/**
 * @module One clean way to stop: `runtime.close()` / `runner.close()` (and
 * `await using`) drain the worker and close the queue, and every pending
 * wait, job result and group stream settles with `ClosedError`, also when
 * the engine is poisoned by failing puts instead of closed. A wait that no
 * worker can end warns after `NO_WORKER_WARNING_MS`.
 */
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import {
  ClosedError,
  JobRunner,
  MemoryStore,
  MockClock,
  NO_WORKER_WARNING_MS,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  StoreUnavailableError,
  WorkflowRuntime,
  withFaults,
  type StepRunner,
} from "taquba";
import { addJob } from "../jobs/fixtures.js";
import { startScript } from "../support/child-script.js";
import { expectExitsSoon } from "../support/exits-soon.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { startLocalLatenessProbe } from "../support/lateness-probe.js";

const enc = (s: string) => new TextEncoder().encode(s);
/** A runner whose steps never end on their own: they wait for a signal a test never sends. */
// The stores of the child processes: removed after each test, once its child has exited.
const tempDir = useTempDirs("taquba-close-");
const parked: StepRunner = { runStep: async (step) => StepOutcome.continueOnSignal(step.payload, `never-${step.runId}`, 3_600_000) };

/** Settles `p` and reports how: the value, or the error it rejected with. */
async function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await p };
  } catch (error) {
    return { ok: false, error };
  }
}

describe("runtime.close()", () => {
  it("rejects every pending wait, job result and group stream with ClosedError, and is idempotent", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "close", { flushIntervalMs: 1 });
    const runner = JobRunner.builder(queue, store)
      .register(addJob, { run: async () => 0 })
      .build();
    const runtime = runner.runtime;
    // No worker: nothing would ever end these.
    const run = await runtime.submit({ input: enc("x") });
    const job = await runner.submit(addJob, { a: 1, b: 2 });
    const group = runner.group("g", addJob);
    await group.submit([{ a: 1, b: 1 }]);
    const waits = [
      settle(runtime.wait(run.runId)),
      settle(runtime.waitTimeout(run.runId, 3_600_000)),
      settle(job.result()),
      settle(job.output()),
      settle(group.join()),
    ];
    await new Promise((r) => setTimeout(r, 20));
    await runner.close();
    await runner.close();
    for (const w of await Promise.all(waits)) {
      expect(w.ok).toBe(false);
      expect((w as { error: unknown }).error).toBeInstanceOf(ClosedError);
    }
    expect(queue.closed).toBe(true);
    // A wait started after close settles at once, too.
    await expect(runtime.wait(run.runId)).rejects.toBeInstanceOf(ClosedError);
    await expect(runner.run()).rejects.toBeInstanceOf(ClosedError);
  });

  it("lets in-flight steps finish before closing the queue", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "drain", { flushIntervalMs: 1 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const slow: StepRunner = {
      runStep: async (step) => {
        started();
        await gate;
        return StepOutcome.succeed(step.payload);
      },
    };
    const runtime = WorkflowRuntime.builder(queue, store, slow, NoopTerminalHook).build();
    runtime.spawn();
    const { runId } = await runtime.submit({ input: enc("drained") });
    await running;
    const closing = runtime.close({ timeoutMs: 5_000 });
    setTimeout(release, 30);
    await closing;
    // The step's success was committed before the queue closed: a new owner sees the run ended.
    const reopened = await Queue.open(store, "drain");
    const again = WorkflowRuntime.builder(reopened, store, slow, NoopTerminalHook).build();
    expect((await again.outcome(runId))?.result).toEqual(enc("drained"));
    await again.close();
  });

  it("closes the queue after the timeout when a step does not finish, and logs it", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "stuck", { flushIntervalMs: 1 });
    const logged: string[] = [];
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const stuck: StepRunner = {
      runStep: async () => {
        started();
        return new Promise<never>(() => undefined);
      },
    };
    const runtime = WorkflowRuntime.builder(queue, store, stuck, NoopTerminalHook)
      .logger({ error: (_o, msg) => logged.push(msg ?? "") })
      .build();
    runtime.spawn();
    await runtime.submit({ input: enc("x") });
    await running;
    // Done at its 50 ms, well before 2 s of this process being run (its stalls on busy cores left out).
    const stalls = startLocalLatenessProbe();
    try {
      const t0 = Date.now();
      await runtime.close({ timeoutMs: 50 });
      const t1 = Date.now();
      const notRun = await stalls.notRunWithin(t0, t1);
      expect(t1 - t0 - notRun, `${t1 - t0} ms, ${notRun} ms of it with this process not run`).toBeLessThan(2_000);
    } finally {
      stalls.stop();
    }
    expect(queue.closed).toBe(true);
    expect(logged.some((m) => m.includes("did not finish within 50 ms"))).toBe(true);
  });

  it("refuses a timeout that is not a finite number of ms", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "bad-timeout");
    const runtime = WorkflowRuntime.builder(queue, store, parked, NoopTerminalHook).build();
    for (const timeoutMs of [NaN, -1, Infinity, 1e30]) expect(() => runtime.close({ timeoutMs })).toThrow(/timeoutMs/);
    await runtime.close();
  });

  it("is what `await using` calls", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "using");
    {
      await using runtime = WorkflowRuntime.builder(queue, store, parked, NoopTerminalHook).build();
      runtime.spawn();
    }
    expect(queue.closed).toBe(true);
  });
});

describe("a poisoned engine", () => {
  it("settles every pending wait, job result and group stream with ClosedError carrying the store failure", async () => {
    const faulty = withFaults(new MemoryStore(), { failureRate: 0, ops: ["put"], failAfterWriteRate: 0 });
    const queue = await Queue.open(faulty, "poison", { flushIntervalMs: 1 });
    const runner = JobRunner.builder(queue, new MemoryStore())
      .register(addJob, { run: async () => 0 })
      .build();
    const runtime = runner.runtime;
    const run = await runtime.submit({ input: enc("x") });
    const job = await runner.submit(addJob, { a: 1, b: 2 });
    const group = runner.group("g", addJob);
    await group.submit([{ a: 1, b: 1 }]);
    const waits = [settle(runtime.wait(run.runId)), settle(runtime.waitTimeout(run.runId, 3_600_000)), settle(job.result()), settle(group.join())];
    // Every put fails from now on: the next commit poisons the engine after its retries.
    faulty.failureRate = 1;
    await expect(runtime.submit({ input: enc("y") })).rejects.toSatisfy((e: unknown) => e instanceof ClosedError && e.cause instanceof StoreUnavailableError);
    expect(queue.closed).toBe(true);
    for (const w of await Promise.all(waits)) {
      expect(w.ok).toBe(false);
      const err = (w as { error: unknown }).error;
      expect(err).toBeInstanceOf(ClosedError);
      // The cause chain reaches the store failure that poisoned the engine.
      const causes: string[] = [];
      for (let e: unknown = err; e instanceof Error; e = e.cause) causes.push(e.message);
      expect(causes.join(" <- ")).toMatch(/injected/i);
    }
  }, 30_000);
});

describe("a wait no worker can end", () => {
  it(`logs one warning after ${NO_WORKER_WARNING_MS} ms when no worker runs in the process`, async () => {
    const clock = new MockClock();
    const store = new MemoryStore();
    const queue = await Queue.open(store, "lonely", { clock, flushIntervalMs: 1 });
    const warned: string[] = [];
    const runtime = WorkflowRuntime.builder(queue, store, parked, NoopTerminalHook)
      .pollIntervalMs(1_000)
      .logger({ error: () => undefined, warn: (_o, msg) => warned.push(msg ?? "") })
      .build();
    const { runId } = await runtime.submit({ input: enc("x") });
    const wait = settle(runtime.wait(runId));
    const tick = async (ms: number) => {
      for (let t = 0; t < ms; t += 1_000) {
        clock.advance(1_000);
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    await tick(NO_WORKER_WARNING_MS - 2_000);
    expect(warned).toEqual([]);
    await tick(4_000);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(`waiting for run "${runId}"`);
    expect(warned[0]).toContain("runtime.spawn()");
    await tick(4_000);
    expect(warned).toHaveLength(1);
    await runtime.close();
    expect((await wait).ok).toBe(false);
  });

  it("does not warn while a worker runs", async () => {
    const clock = new MockClock();
    const store = new MemoryStore();
    const queue = await Queue.open(store, "busy", { clock, flushIntervalMs: 1 });
    const warned: string[] = [];
    const runtime = WorkflowRuntime.builder(queue, store, parked, NoopTerminalHook)
      .pollIntervalMs(1_000)
      .logger({ error: () => undefined, warn: (_o, msg) => warned.push(msg ?? "") })
      .build();
    runtime.spawn();
    const { runId } = await runtime.submit({ input: enc("x") });
    const wait = settle(runtime.wait(runId));
    for (let t = 0; t < NO_WORKER_WARNING_MS + 5_000; t += 1_000) {
      clock.advance(1_000);
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(warned).toEqual([]);
    await runtime.close();
    expect((await wait).ok).toBe(false);
  });
});

describe("the process after close", () => {
  // The child takes about 3 s of CPU to load the package through tsx: 21-42 s of wall time on two cores at
  // load 14-20. The limit guards against a hang and is stretched by the load (support/load.ts).
  for (const mode of ["runtime", "runner"] as const) {
    it(
      `exits on its own after ${mode}.close() with waits pending, nothing left open (LocalStore, real timers)`,
      {
        timeout: loadLimitTimeout(60_000),
      },
      () =>
        withinLoadLimit(60_000, async () => {
          const script = fileURLToPath(new URL("./fixtures/close-exits.ts", import.meta.url));
          const child = startScript(script, [mode, await tempDir()]);
          await expectExitsSoon(child, "closed", `${mode}.close()`);
          expect(child.lines).toContain("wait: ClosedError");
          expect(child.lines).toContain("result: ClosedError");
          expect(child.lines).toContain("group: ClosedError");
        }),
    );
  }
});
