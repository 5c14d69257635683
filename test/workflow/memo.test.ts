/**
 * @module `Memo`: scoping by run and step, memoized values, undecodable
 * entries, content keys and clearing one run.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, ReservedKeyError, RUN_OUTCOME_MEMO_KEY, RunId } from "taquba";

const bytes = (s: string) => new TextEncoder().encode(s);
const runId = RunId.parse("run-1");

describe("Memo", () => {
  it("scopes entries per (run, step) and keeps the run namespace apart", async () => {
    const memos = new MemoStore(new MemoryStore(), "wf-memo");
    const s0 = memos.newMemo(runId, 0);
    const s1 = memos.newMemo(runId, 1);
    const run = memos.runMemo(runId);
    await s0.put("k", bytes("zero"));
    await run.put("k", bytes("run"));
    expect(await s0.get("k")).toEqual(bytes("zero"));
    expect(await s1.get("k")).toBeNull();
    expect(await run.get("k")).toEqual(bytes("run"));
    expect(await memos.newMemo(RunId.parse("run-10"), 0).get("k")).toBeNull();
    await s0.put("k", bytes("again"));
    expect(await s0.get("k")).toEqual(bytes("again"));
  });

  it("memoized computes once, then returns the stored value with named fields intact", async () => {
    const memo = new MemoStore(new MemoryStore(), "m").newMemo(runId, 0);
    let calls = 0;
    const compute = async () => {
      calls++;
      return { draft: "text", tokens: 12, raw: bytes("x") };
    };
    const first = await memo.memoized("draft", compute);
    const second = await memo.memoized("draft", compute);
    expect(calls).toBe(1);
    expect(second).toEqual(first);
    expect(second.raw).toBeInstanceOf(Uint8Array);
  });

  it("recomputes and overwrites an entry that fails to decode", async () => {
    const memo = new MemoStore(new MemoryStore(), "m").newMemo(runId, 0);
    await memo.put("v", new Uint8Array([0xdc, 0xff])); // a truncated MessagePack array
    const v = await memo.memoized("v", async () => ({ ok: true }));
    expect(v).toEqual({ ok: true });
    let calls = 0;
    expect(await memo.memoized("v", async () => (calls++, { ok: false }))).toEqual({ ok: true });
    expect(calls).toBe(0);
  });

  it("stores nothing when the computation throws", async () => {
    const memo = new MemoStore(new MemoryStore(), "m").newMemo(runId, 0);
    await expect(memo.memoized("v", async () => Promise.reject(new Error("api down")))).rejects.toThrow("api down");
    expect(await memo.get("v")).toBeNull();
    expect(await memo.memoized("v", async () => 7)).toBe(7);
  });

  it("derives content keys from the MessagePack of the input", async () => {
    const memo = new MemoStore(new MemoryStore(), "m").newMemo(runId, 2);
    const input = { operation: "draft", payload: bytes("p") };
    const key = memo.contentKey(input);
    expect(key).toMatch(/^content:[0-9a-f]{64}$/);
    expect(memo.contentKey({ operation: "draft", payload: bytes("p") })).toBe(key);
    expect(memo.contentKey({ operation: "summary", payload: bytes("p") })).not.toBe(key);
    let calls = 0;
    const v1 = await memo.memoizedByContent(input, async () => (calls++, "result"));
    const v2 = await memo.memoizedByContent({ operation: "draft", payload: bytes("p") }, async () => (calls++, "other"));
    expect([v1, v2, calls]).toEqual(["result", "result", 1]);
    await memo.contentPut({ a: 1 }, bytes("raw"));
    expect(await memo.contentGet({ a: 1 })).toEqual(bytes("raw"));
    expect(await memo.get(memo.contentKey({ a: 1 }))).toEqual(bytes("raw"));
  });

  it("reserves workflow.outcome in the run memo only", async () => {
    const memos = new MemoStore(new MemoryStore(), "m");
    await expect(memos.runMemo(runId).put(RUN_OUTCOME_MEMO_KEY, bytes("x"))).rejects.toBeInstanceOf(ReservedKeyError);
    await expect(memos.runMemo(runId).put(`${RUN_OUTCOME_MEMO_KEY}:x:1`, bytes("x"))).rejects.toBeInstanceOf(ReservedKeyError);
    await expect(memos.runMemo(runId).memoized(RUN_OUTCOME_MEMO_KEY, async () => 1)).rejects.toBeInstanceOf(ReservedKeyError);
    await memos.newMemo(runId, 0).put(RUN_OUTCOME_MEMO_KEY, bytes("fine"));
  });

  it("clearMemosForRun removes both namespaces of one run only", async () => {
    const store = new MemoryStore();
    const memos = new MemoStore(store, "m");
    const other = RunId.parse("run-10");
    await memos.newMemo(runId, 0).put("a", bytes("1"));
    await memos.newMemo(runId, 3).put("b", bytes("2"));
    await memos.runMemo(runId).put("c", bytes("3"));
    await memos.newMemo(other, 0).put("a", bytes("kept"));
    expect(await memos.clearMemosForRun(runId)).toBe(3);
    expect(await memos.newMemo(runId, 0).get("a")).toBeNull();
    expect(await memos.runMemo(runId).get("c")).toBeNull();
    expect(await memos.newMemo(other, 0).get("a")).toEqual(bytes("kept"));
    expect(store.size).toBe(1);
  });
});
