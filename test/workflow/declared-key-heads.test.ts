/**
 * @module The runtime declares the key families every step reads or writes
 * (run records, step pointers, history) to its queue when it is built, so
 * the engine's memtable searches each family alone: names from the
 * runtime's own key module, once however many runtimes share the queue.
 * A queue whose engine heads are all taken runs the workflow without them
 * and says so; a closed queue is left to refuse the runtime's calls.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MemoryStore, MockClock, Queue, StepOutcome, WorkflowRuntime, NoopTerminalHook } from "taquba";
import { BUSIEST_KEY_PREFIXES, RUNS_PREFIX, STEPS_PREFIX } from "../../runtime/workflow/records/kv-keys.js";
import { HISTORY_PREFIX } from "../../runtime/workflow/runs/history-records.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

/** Three steps, then success. */
const runner = runnerOf(async (s) => (s.stepNumber < 2 ? StepOutcome.continueNow(enc(`s${s.stepNumber + 1}`)) : StepOutcome.succeed(enc("done"))));

describe("the workflow's declared key heads", () => {
  it("are its run records, step pointers and history, declared once however many runtimes share the queue; runs end as before", async () => {
    expect([...BUSIEST_KEY_PREFIXES].sort()).toEqual([HISTORY_PREFIX, RUNS_PREFIX, STEPS_PREFIX].sort());
    const env = await openEnv(runner);
    try {
      expect(env.queue.keyHeads).toEqual([...BUSIEST_KEY_PREFIXES].sort());
      const second = WorkflowRuntime.builder(env.queue, env.store, runner, NoopTerminalHook).build();
      expect(second).toBeDefined();
      expect(env.queue.keyHeads).toEqual([...BUSIEST_KEY_PREFIXES].sort());
      for (const id of ["r1", "r2", "r3"]) await env.runtime.submit({ runId: id, input: enc("in") });
      for (const id of ["r1", "r2", "r3"]) expect((await env.runtime.wait(id)).outcome?.status).toBe("succeeded");
      expect((await env.queue.kvScan(HISTORY_PREFIX)).entries.length).toBeGreaterThan(0);
    } finally {
      await env.stop();
    }
  });

  it("a queue whose engine heads are all taken runs the workflow without them, and the runtime says so", async () => {
    const own = Array.from({ length: 31 }, (_, i) => `c/${String(i).padStart(2, "0")}/`);
    const warned: string[] = [];
    const quiet = () => {};
    const env = await openEnv(runner, {
      queueOptions: { engineOptions: { keyHeads: own } },
      configure: (b) => b.logger({ debug: quiet, info: quiet, warn: (_obj: unknown, msg?: string) => warned.push(String(msg)), error: quiet }),
    });
    try {
      expect(env.queue.keyHeads).toEqual([]);
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatch(/no room for the workflow's key heads .*engineOptions\.keyHeads/);
      await env.runtime.submit({ runId: "r1", input: enc("in") });
      expect((await env.runtime.wait("r1")).outcome?.status).toBe("succeeded");
    } finally {
      await env.stop();
    }
  });

  it("a runtime built over a closed queue builds, and its calls get the queue's ClosedError", async () => {
    const queue = await Queue.open(new MemoryStore(), "wf", { flushIntervalMs: 1, clock: new MockClock(1_700_000_000_000) });
    await queue.close();
    const runtime = WorkflowRuntime.builder(queue, new MemoryStore(), runner, NoopTerminalHook).build();
    await expect(runtime.submit({ runId: "r1", input: enc("in") })).rejects.toBeInstanceOf(ClosedError);
  });
});
