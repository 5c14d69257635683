/**
 * @module A view keeps the keys of a run whose end it answered (a wait's
 * or an outcome's) in a small bound of their own: the outcome read right
 * after a wait, and reads again soon, still find them, but they leave after
 * a few dozen later ends instead of hundreds of runs later, so they need
 * not outlive the young generation. A run whose keys left is read as
 * before, with its keys built again.
 */
import { describe, expect, it } from "vitest";
import { MemoStore, StepOutcome, WorkflowView } from "taquba";
import type { KvKeyRef } from "../../runtime/queue/user-keys.js";
import { VIEW_ENDED_RUN_KEYS_KEPT, ViewRunKeys } from "../../runtime/workflow/runs/view-run-keys.js";
import { runKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";

describe("a view's keys of ended runs", () => {
  it("move out of the runs read into a bound of their own, oldest ended dropped first", () => {
    const keys = new ViewRunKeys("steps", 4, undefined, 2);
    const a = keys.of("a");
    const b = keys.of("b");
    keys.of("c");
    keys.ended("a");
    keys.ended("never read");
    expect(keys.size).toBe(3);
    expect(keys.of("a")).toBe(a);
    // Four runs read besides a: b, the oldest of them, leaves; a, ended, stays.
    for (const id of ["d", "e", "f"]) keys.of(id);
    expect(keys.of("a")).toBe(a);
    expect(keys.of("b")).not.toBe(b);
    // A second end read of a leaves it where it is; two later ends push it out.
    keys.ended("a");
    const d = keys.of("d");
    keys.ended("d");
    expect(keys.of("a")).toBe(a);
    keys.ended("e");
    expect(keys.of("d")).toBe(d);
    const again = keys.of("a");
    expect(again).not.toBe(a);
    expect(again.run).toBe(runKey("steps", "a"));
  });

  it("are built again for a run read after more ends than the bound, and answer as before", async () => {
    const runner = runnerOf(async (step) => StepOutcome.succeed(enc(`result of ${dec(step.payload)}`)));
    const env = await openEnv(runner);
    try {
      const q = env.queue;
      const made: string[] = [];
      const source = {
        kvGet: (k: string) => q.kvGet(k),
        job: (id: string) => q.view().job(id),
        kvScan: (p: string, o?: Parameters<typeof q.kvScan>[1]) => q.kvScan(p, o),
        kvBorrowNow: (k: string | KvKeyRef) => q.kvBorrowNow(k),
        kvTokenNow: (k: string | KvKeyRef) => q.kvTokenNow(k),
        kvKeyRef: (k: string) => {
          made.push(k);
          return q.kvKeyRef(k);
        },
      };
      const view = new WorkflowView(source, new MemoStore(env.store, "workflow-steps-memo"));
      const ids = Array.from({ length: VIEW_ENDED_RUN_KEYS_KEPT + 8 }, (_, i) => `run-${i}`);
      await Promise.all(ids.map((id) => env.runtime.submit({ runId: id, input: enc(id) })));
      await Promise.all(ids.map((id) => env.runtime.wait(id)));
      for (const id of ids) expect(dec((await view.outcome(id))!.result!)).toBe(`result of ${id}`);
      // Three references a run, made once.
      expect(made.length).toBe(3 * ids.length);
      const last = ids[ids.length - 1]!;
      expect(dec((await view.outcome(last))!.result!)).toBe(`result of ${last}`);
      expect(made.length).toBe(3 * ids.length);
      // The first ended before the bound's worth of later ends: its keys left, and are made again.
      expect(dec((await view.outcome(ids[0]!))!.result!)).toBe(`result of ${ids[0]}`);
      expect(made.length).toBe(3 * ids.length + 3);
      expect(made.slice(-3).includes(runKey("workflow-steps", ids[0]!))).toBe(true);
      expect(await view.status(ids[0]!)).toMatchObject({ state: "terminated", step: 0 });
    } finally {
      await env.stop();
    }
  });
});
