/**
 * @module A run id submitted again after its run ended starts a run that
 * reads nothing the earlier run memoized: step memos, the run memo,
 * content-keyed memos and step-output replay records are each
 * submission's own, over a memory store and a local directory. A redriven
 * run keeps its memos; a run submitted before memo sets existed resumes
 * with the memos it wrote; `clearMemosForRun` removes every submission's.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, MemoStore, type ObjectStore, StepError, StepOutcome, type StepRunner, ValidationError } from "taquba";
import { runIndexKey } from "../../runtime/workflow/runs/run-index.js";
import { decodeIndexEntry, encodeIndexEntry } from "../../runtime/workflow/runs/run-index.js";
import { memoSetSegment as memoSetSegmentOf, runKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeRunRecord, encodeRunRecord } from "../../runtime/workflow/records/records.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc, openEnv, overInline, runnerOf } from "./helpers.js";

const Q = "workflow-steps";
const MEMO_PREFIX = "workflow-steps-memo";
const tempDir = useTempDirs("wf-resubmit-memo-");

const stores: Array<[string, () => Promise<ObjectStore>]> = [
  ["a memory store", async () => new MemoryStore()],
  ["a local directory", async () => new LocalStore(await tempDir())],
];

/** A runner memoizing its input under fixed keys in every memo kind, counting the computations. */
function memoizingRunner(): { runner: StepRunner; computed: () => number } {
  let computed = 0;
  const runner = runnerOf(async (s) => {
    const input = dec(s.payload);
    const count = async (v: string) => {
      computed++;
      return v;
    };
    const own = await s.memo.memoized("k", () => count(`step:${input}`));
    const shared = await s.runMemo.memoized("k", () => count(`run:${input}`));
    const byContent = await s.memo.memoizedByContent({ op: "fixed" }, () => count(`content:${input}`));
    const raw = await s.runMemo.get("raw");
    await s.runMemo.put("raw", enc(input));
    return StepOutcome.succeed(enc([own, shared, byContent, dec(raw)].join("|")));
  });
  return { runner, computed: () => computed };
}

/** Every object key under `prefix`. */
async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

describe.each(stores)("a run id submitted again after its run ended, over %s", (_, makeStore) => {
  it("computes every memo afresh: step memo, run memo, content-keyed memo and raw entries", async () => {
    const { runner, computed } = memoizingRunner();
    const env = await openEnv(runner, { store: await makeStore() });
    try {
      await env.runtime.submit({ runId: "a", input: enc("one") });
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("step:one|run:one|content:one|null");
      expect(computed()).toBe(3);
      const first = (await env.runtime.inspectRun("a"))!.memoSet;
      expect((await env.runtime.submit({ runId: "a", input: enc("two") })).newlySubmitted).toBe(true);
      // The same keys, another input: computed again, nothing of the run before read.
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("step:two|run:two|content:two|null");
      expect(computed()).toBe(6);
      const second = (await env.runtime.inspectRun("a"))!.memoSet;
      expect(second).toBeDefined();
      expect(second).not.toBe(first);
      // Each submission's entries are where its memo set says, readable from outside a step.
      const memos = new MemoStore(env.store, MEMO_PREFIX);
      expect(await memos.newMemo("a", 0, first).memoized("k", async () => "absent")).toBe("step:one");
      expect(await memos.newMemo("a", 0, second).memoized("k", async () => "absent")).toBe("step:two");
      expect(dec(await memos.runMemo("a", first).get("raw"))).toBe("one");
      // The same input a third time still reads nothing of the runs before.
      await env.runtime.submit({ runId: "a", input: enc("two") });
      expect(dec((await env.runtime.wait("a")).outcome!.result)).toBe("step:two|run:two|content:two|null");
      expect(computed()).toBe(9);
      // One clear removes the entries of every submission of the id.
      await memos.clearMemosForRun("a");
      expect(await keysUnder(env.store, `${MEMO_PREFIX}/memos/a/`)).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("runs the step again instead of replaying the earlier run's recorded outcome", async () => {
    let calls = 0;
    const env = await openEnv(
      runnerOf(async (s) => {
        calls++;
        return StepOutcome.succeed(enc(`${dec(s.payload)}#${calls}`));
      }),
      { store: await makeStore(), configure: (b) => b.stepOutputReplay() },
    );
    try {
      await env.runtime.submit({ runId: "r", input: enc("same") });
      expect(dec((await env.runtime.wait("r")).outcome!.result)).toBe("same#1");
      // Step 0 of the new run has the very payload the earlier run's replay record was written for.
      await env.runtime.submit({ runId: "r", input: enc("same") });
      expect(dec((await env.runtime.wait("r")).outcome!.result)).toBe("same#2");
      expect(calls).toBe(2);
    } finally {
      await env.stop();
    }
  });

  it("reads its own large result, not the earlier run's result record", async () => {
    let n = 0;
    const env = await openEnv(
      runnerOf(async () => {
        n++;
        return StepOutcome.succeed(overInline(`result ${n}`));
      }),
      { store: await makeStore() },
    );
    try {
      await env.runtime.submit({ runId: "big", input: enc("x") });
      expect(dec((await env.runtime.wait("big")).outcome!.result).trimEnd()).toBe("result 1");
      await env.runtime.submit({ runId: "big", input: enc("x") });
      expect(dec((await env.runtime.wait("big")).outcome!.result).trimEnd()).toBe("result 2");
      expect(dec((await env.runtime.outcome("big"))!.result).trimEnd()).toBe("result 2");
    } finally {
      await env.stop();
    }
  });

  it("a redriven run keeps its memos: the step run again reads what the ended pass memoized", async () => {
    let computed = 0;
    let failNext = true;
    const env = await openEnv(
      runnerOf(async (s) => {
        const v = await s.runMemo.memoized("k", async () => {
          computed++;
          return `pass:${dec(s.payload)}`;
        });
        if (s.stepNumber === 0) return StepOutcome.continueNow(s.payload);
        if (failNext) {
          failNext = false;
          throw StepError.permanent("fails once");
        }
        return StepOutcome.succeed(enc(v));
      }),
      { store: await makeStore() },
    );
    try {
      await env.runtime.submit({ runId: "d", input: enc("in") });
      expect((await env.runtime.wait("d")).outcome!.status).toBe("failed");
      await env.runtime.retryRun("d");
      expect(dec((await env.runtime.wait("d")).outcome!.result)).toBe("pass:in");
      expect(computed).toBe(1);
    } finally {
      await env.stop();
    }
  });
});

describe("a memo set named from outside a step", () => {
  it("is refused with a ValidationError when it is no run's memoSet, and nothing is written", async () => {
    const store = new MemoryStore();
    const memos = new MemoStore(store, MEMO_PREFIX);
    for (const bad of ["", 7, null, {}, Symbol("s")]) {
      expect(() => memos.newMemo("a", 0, bad as never)).toThrow(ValidationError);
      expect(() => memos.runMemo("a", bad as never)).toThrow(ValidationError);
      await expect(memos.clearMemoSet("a", bad as never)).rejects.toBeInstanceOf(ValidationError);
    }
    await expect(memos.clearMemoSet("a", undefined as never)).rejects.toBeInstanceOf(ValidationError);
    expect(await keysUnder(store, "")).toEqual([]);
  });
});

describe("a run submitted before memo sets existed", () => {
  it("resumes after a reopen with the memos it wrote where earlier versions put them", async () => {
    const dir = await tempDir();
    const runner = (computed: string[]) =>
      runnerOf(async (s) => {
        const own = await s.memo.memoized("k", async () => {
          computed.push(`step ${s.stepNumber}`);
          return `new step ${s.stepNumber}`;
        });
        const shared = await s.runMemo.memoized("k", async () => {
          computed.push(`run ${s.stepNumber}`);
          return "new run";
        });
        const acc = `${dec(s.payload)}${own}/${shared};`;
        return s.stepNumber === 0 ? StepOutcome.continueNow(enc(acc)) : StepOutcome.succeed(enc(acc));
      });
    const before: string[] = [];
    const old = await openEnv(runner(before), { store: new LocalStore(dir), start: false });
    await old.runtime.submit({ runId: "legacy", input: enc("") });
    // The records as an earlier version wrote them: no memo set.
    const rk = runKey(Q, "legacy");
    const { memoSet: _set, ...run } = decodeRunRecord((await old.queue.kvGet(rk))!, rk);
    await old.queue.kvPut(rk, encodeRunRecord(run));
    const ik = runIndexKey(Q, run.submittedAtMs, "legacy");
    const { memoSet: _entrySet, ...entry } = decodeIndexEntry((await old.queue.kvGet(ik))!, ik);
    await old.queue.kvPut(ik, encodeIndexEntry(entry));
    // What its steps memoized before the upgrade, at the keys of that layout.
    const memos = new MemoStore(old.store, MEMO_PREFIX);
    await memos.newMemo("legacy", 0).memoized("k", async () => "old step 0");
    await memos.newMemo("legacy", 1).memoized("k", async () => "old step 1");
    await memos.runMemo("legacy").memoized("k", async () => "old run");
    await old.stop();

    const after: string[] = [];
    const env = await openEnv(runner(after), { store: new LocalStore(dir) });
    try {
      expect(dec((await env.runtime.wait("legacy")).outcome!.result)).toBe("old step 0/old run;old step 1/old run;");
      expect(after).toEqual([]);
      expect((await env.runtime.inspectRun("legacy"))!.memoSet).toBeUndefined();
      // Submitted again, the id gets a memo set, and the old entries are not read.
      await env.runtime.submit({ runId: "legacy", input: enc("") });
      expect(dec((await env.runtime.wait("legacy")).outcome!.result)).toBe("new step 0/new run;new step 1/new run;");
      expect(after).toEqual(["step 0", "run 0", "step 1"]);
      await new MemoStore(env.store, MEMO_PREFIX).clearMemosForRun("legacy");
      expect(await keysUnder(env.store, `${MEMO_PREFIX}/memos/legacy/`)).toEqual([]);
    } finally {
      await env.stop();
    }
  });
});

describe("memo retention of a run id submitted again", () => {
  it("removes the earlier run's memo set when its window ends, keeping the later run's, and a redriven run's own set", async () => {
    let failNext = false;
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.memoized("k", async () => dec(s.payload));
        await s.runMemo.put("r", s.payload);
        if (failNext) {
          failNext = false;
          throw StepError.permanent("fails once");
        }
        return StepOutcome.succeed(s.payload);
      }),
      { store: new MemoryStore(), configure: (b) => b.memoRetention(60_000).stepOutputReplay() },
    );
    try {
      const setKeys = async (set: string | undefined) => {
        const seg = (await keysUnder(env.store, `${MEMO_PREFIX}/memos/a/`)).concat(await keysUnder(env.store, `${MEMO_PREFIX}/step-outputs/a/`));
        return seg.filter((k) => set !== undefined && k.includes(`/a/${memoSetSegmentOf(set)}/`)).length;
      };
      failNext = true;
      await env.runtime.submit({ runId: "a", input: enc("one") });
      expect((await env.runtime.wait("a")).outcome!.status).toBe("failed");
      const first = (await env.runtime.inspectRun("a"))!.memoSet;
      // Redriven: a later end of the same submission; the window of the earlier end runs out first.
      await env.runtime.retryRun("a");
      expect((await env.runtime.wait("a")).outcome!.status).toBe("succeeded");
      env.clock.advance(30_000);
      await env.runtime.submit({ runId: "a", input: enc("two") });
      expect((await env.runtime.wait("a")).outcome!.status).toBe("succeeded");
      const second = (await env.runtime.inspectRun("a"))!.memoSet;
      expect(await setKeys(first)).toBe(3);
      expect(await setKeys(second)).toBe(3);
      // The failed end's window and the redriven end's window have run out; the later run's has not.
      env.clock.advance(31_000);
      await env.runtime.sweepMemos();
      expect(await setKeys(first)).toBe(0);
      expect(await setKeys(second)).toBe(3);
      expect(dec((await env.runtime.outcome("a"))!.result)).toBe("two");
      env.clock.advance(60_000);
      expect(await env.runtime.sweepMemos()).toBe(1);
      expect(await keysUnder(env.store, `${MEMO_PREFIX}/memos/a/`)).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("keeps a redriven run's set when an earlier end's window runs out", async () => {
    let failNext = true;
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.runMemo.memoized("k", async () => dec(s.payload));
        if (failNext) {
          failNext = false;
          throw StepError.permanent("fails once");
        }
        return StepOutcome.succeed(s.payload);
      }),
      { store: new MemoryStore(), configure: (b) => b.memoRetention(60_000) },
    );
    try {
      await env.runtime.submit({ runId: "b", input: enc("one") });
      expect((await env.runtime.wait("b")).outcome!.status).toBe("failed");
      env.clock.advance(30_000);
      await env.runtime.retryRun("b");
      expect((await env.runtime.wait("b")).outcome!.status).toBe("succeeded");
      env.clock.advance(31_000);
      // The failed end's marker is stale: the run's own set stays.
      await env.runtime.sweepMemos();
      expect(await keysUnder(env.store, `${MEMO_PREFIX}/memos/b/`)).toHaveLength(1);
    } finally {
      await env.stop();
    }
  });
});
