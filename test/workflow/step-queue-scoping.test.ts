/**
 * @module Runs belong to their step queue: two runtimes over one `Queue`
 * with different `queueName`s keep separate run-id, signal-key and group
 * namespaces, so identical run ids (and keys) never meet.
 */
import { describe, expect, it } from "vitest";
import { MemoStore, NoopTerminalHook, StepOutcome, WorkflowRuntime, WorkflowView, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";
import { runResultPrefix } from "../../runtime/workflow/records/kv-keys.js";

const HOUR = 3_600_000;

/** Step 0 waits on the key in its payload when it starts with "wait:"; otherwise the run succeeds with `tag` + its input. */
function taggedRunner(tag: string): StepRunner {
  return {
    async runStep(s) {
      const p = dec(s.payload);
      if (s.stepNumber === 0 && p.startsWith("wait:")) return StepOutcome.continueOnSignal(s.payload, p.slice(5), HOUR);
      if (s.stepNumber === 1) return StepOutcome.succeed(enc(`${tag}:${dec(s.signal)}`));
      return StepOutcome.succeed(enc(`${tag}:${p}`));
    },
  };
}

describe("step queue scoping", () => {
  it("keeps identical run ids of two step queues over one Queue apart", async () => {
    const env = await openEnv(taggedRunner("A"));
    const b = WorkflowRuntime.builder(env.queue, env.store, taggedRunner("B"), NoopTerminalHook).queueName("other-steps").build();
    const workerB = b.spawn();

    const sa = await env.runtime.submit({ input: enc("x"), runId: "r" });
    // Same id, different input: a run of another step queue, not a duplicate and not a mismatch.
    const sb = await b.submit({ input: enc("y"), runId: "r" });
    expect(sa.newlySubmitted).toBe(true);
    expect(sb.newlySubmitted).toBe(true);
    const [ea, eb] = await Promise.all([env.runtime.wait("r"), b.wait("r")]);
    expect(dec(ea.outcome!.result)).toBe("A:x");
    expect(dec(eb.outcome!.result)).toBe("B:y");
    expect(dec((await env.runtime.outcome("r"))!.result)).toBe("A:x");
    expect(dec((await b.outcome("r"))!.result)).toBe("B:y");

    // A view without a runtime names the step queue it reads.
    const viewB = new WorkflowView(env.queue.view(), new MemoStore(env.store, "other-steps-memo"), "other-steps");
    expect(dec((await viewB.outcome("r"))!.result)).toBe("B:y");

    await workerB.shutdown();
    await env.stop();
  });

  it("keeps signal keys, cancellation and status of two step queues apart", async () => {
    const env = await openEnv(taggedRunner("A"));
    const b = WorkflowRuntime.builder(env.queue, env.store, taggedRunner("B"), NoopTerminalHook).queueName("other-steps").build();
    const workerB = b.spawn();

    await env.runtime.submit({ input: enc("wait:k"), runId: "w" });
    await until(async () => (await env.runtime.status("w"))?.step === 1, "A's run waiting");
    // The other queue knows no run "w" and no waiter on "k".
    expect(await b.status("w")).toBeNull();
    expect(await b.cancel("w")).toBe(false);
    expect(await b.signal("k", enc("for-b"))).toBe("buffered");
    expect(await env.runtime.status("w")).toMatchObject({ state: "pending", step: 1 });

    // B's own waiter on "k" consumes B's buffered signal; A's waiter is untouched.
    await b.submit({ input: enc("wait:k"), runId: "w" });
    expect(dec((await b.wait("w")).outcome!.result)).toBe("B:for-b");
    expect(await env.runtime.status("w")).toMatchObject({ state: "pending", step: 1 });

    expect(await env.runtime.signal("k", enc("for-a"))).toBe("delivered");
    expect(dec((await env.runtime.wait("w")).outcome!.result)).toBe("A:for-a");

    await workerB.shutdown();
    await env.stop();
  });

  it("keeps run groups of the same id apart", async () => {
    const env = await openEnv(taggedRunner("A"));
    const b = WorkflowRuntime.builder(env.queue, env.store, taggedRunner("B"), NoopTerminalHook).queueName("other-steps").build();
    const workerB = b.spawn();
    await env.runtime.group("g").submit([{ key: "k", input: enc("1") }]);
    await b.group("g").submit([{ key: "k", input: enc("2") }]);
    const results = async (rt: WorkflowRuntime) => {
      const out: string[] = [];
      for await (const r of rt.group("g").results()) out.push(`${r.key}:${dec(r.outcome?.result)}`);
      return out;
    };
    expect(await results(env.runtime)).toEqual(["k:A:1"]);
    expect(await results(b)).toEqual(["k:B:2"]);
    await workerB.shutdown();
    await env.stop();
  });

  it("rejects a step queue name the queue would refuse", () => {
    expect(() => WorkflowRuntime.builder({} as never, {} as never, taggedRunner("A"), NoopTerminalHook).queueName("a/b")).toThrow(/queue name/);
  });
});

describe("runtimes of one step queue with different memo prefixes", () => {
  it("keep a run's memo, result record and retention where the submitting runtime put them", async () => {
    // Step 0 stores a value in the run memo and continues after a delay; step 1 reads it back.
    const runner: StepRunner = {
      async runStep(s) {
        if (s.stepNumber === 0) {
          await s.runMemo.put("draft", enc("from step 0"));
          return StepOutcome.continueAfter(s.payload, 1_000);
        }
        return StepOutcome.succeed((await s.runMemo.get("draft")) ?? enc("memo missing"));
      },
    };
    const env = await openEnv(runner, { configure: (b) => b.memoPrefix("pa") });
    const b = WorkflowRuntime.builder(env.queue, env.store, runner, NoopTerminalHook).memoPrefix("pb").memoRetention(60_000).build();
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(async () => (await env.runtime.status("r"))?.step === 1, "step 0 done under the first runtime");
    await env.worker!.shutdown();

    // The other runtime works step 1 of the run.
    const workerB = b.spawn();
    env.clock.advance(1_000);
    const end = await b.wait("r");
    expect(dec(end.outcome!.result)).toBe("from step 0");
    // Both runtimes read the same result record.
    expect(dec((await env.runtime.outcome("r"))!.result)).toBe("from step 0");
    let underB = 0;
    for await (const _ of env.store.list("pb/")) underB++;
    expect(underB).toBe(0);

    // Retention, configured on the second runtime, sweeps the run's entries under the first one's prefix.
    env.clock.advance(60_000);
    await b.sweepMemos();
    let underA = 0;
    for await (const _ of env.store.list("pa/memos/r/")) underA++;
    for await (const _ of env.store.list(runResultPrefix("pa", "r"))) underA++;
    expect(underA).toBe(0);
    expect(await b.status("r")).toBeNull();
    await workerB.shutdown();
    await env.queue.close();
  });

  it("keep the memos of steps that follow one another at once on the other runtime where the submitting runtime put them", async () => {
    // Each step writes its own and the run's memo and continues at once, so each step after the first is claimed by its
    // predecessor's settlement and handed the run's records (and the run's memos) with it; the last reads every entry back.
    const STEPS = 5;
    const runner: StepRunner = {
      async runStep(s) {
        await s.memo.put("own", enc(`step ${s.stepNumber}`));
        await s.runMemo.put(`step-${s.stepNumber}`, enc(`from step ${s.stepNumber}`));
        if (s.stepNumber < STEPS - 1) return StepOutcome.continueNow(s.payload);
        const seen: string[] = [];
        for (let i = 0; i < STEPS; i++) seen.push(dec((await s.runMemo.get(`step-${i}`)) ?? enc("missing")));
        return StepOutcome.succeed(enc(seen.join(",")));
      },
    };
    const env = await openEnv(runner, { configure: (b) => b.memoPrefix("pa") });
    await env.worker!.shutdown();
    const b = WorkflowRuntime.builder(env.queue, env.store, runner, NoopTerminalHook).memoPrefix("pb").build();
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    const workerB = b.spawn();
    const end = await b.wait("r");
    expect(dec(end.outcome!.result)).toBe(Array.from({ length: STEPS }, (_, i) => `from step ${i}`).join(","));
    let underB = 0;
    for await (const _ of env.store.list("pb/")) underB++;
    expect(underB).toBe(0);
    const ownUnderA: string[] = [];
    // The run memo's entries (in the run's memo set's `run/` folder) are counted apart from each step's own.
    for await (const o of env.store.list("pa/memos/r/")) if (!o.key.includes("/run/")) ownUnderA.push(o.key);
    expect(ownUnderA).toHaveLength(STEPS);
    await workerB.shutdown();
    await env.queue.close();
  });
});
