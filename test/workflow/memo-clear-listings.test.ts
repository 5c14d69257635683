/**
 * @module A run's memo and replay records cleared over a store whose
 * listing ignores the prefix or the key to start after: only that run's
 * records are deleted, every one of them, and the clear ends.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, RunId } from "taquba";
import { runReplayRoot } from "../../runtime/workflow/records/kv-keys.js";
import { CarelessListings, type Disregard } from "../support/careless-listings.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const runId = RunId.parse("run-1");
const other = RunId.parse("run-10");

async function seeded(disregard: Disregard) {
  const store = new MemoryStore();
  const memos = new MemoStore(new CarelessListings(store, disregard), "m");
  // Another run's memos and replay records, the user's own keys before and after the memo folder.
  await memos.newMemo(other, 0).put("a", bytes("kept"));
  await memos.runMemo(other).put("b", bytes("kept"));
  await store.put(`${runReplayRoot("m", other)}0/x`, bytes("kept"));
  await store.put(`${runReplayRoot("m", other)}4/x`, bytes("kept"));
  await store.put("a-user-key", bytes("kept"));
  await store.put("z-user-key", bytes("kept"));
  // A user key whose tail past the length of run-1's replay folder reads as a late step number.
  await store.put(`${"z".repeat(runReplayRoot("m", runId).length)}9/x`, bytes("kept"));
  return { store, memos };
}

describe.each<Disregard>(["prefix", "startAfter", "both"])("a run's records cleared over a store whose listing ignores %s", (disregard) => {
  it("clearMemosForRun deletes that run's records, all of them, and nothing else", async () => {
    const { store, memos } = await seeded(disregard);
    const kept = store.size;
    // More than one chunk of listed keys (the clear lists 1,000 at a time) in one namespace.
    for (let i = 0; i < 1_100; i++) await memos.newMemo(runId, 0).put(`k${i}`, bytes("gone"));
    await memos.runMemo(runId).put("c", bytes("gone"));
    expect(await memos.clearMemosForRun(runId)).toBe(1_101);
    expect(store.size).toBe(kept);
    expect(await memos.newMemo(other, 0).get("a")).toEqual(bytes("kept"));
  });

  it("clearReplaysFrom deletes that run's later replay records only", async () => {
    const { store } = await seeded(disregard);
    const memos = new MemoStore(new CarelessListings(store, disregard), "m");
    for (const step of [0, 1, 2, 3]) await store.put(`${runReplayRoot("m", runId)}${step}/x`, bytes(String(step)));
    const kept = store.size - 2;
    await memos.clearReplaysFrom(runId, 2);
    expect(store.size).toBe(kept);
    expect(await store.get(`${runReplayRoot("m", runId)}1/x`)).not.toBeNull();
    expect(await store.get(`${runReplayRoot("m", runId)}2/x`)).toBeNull();
    expect(await store.get(`${runReplayRoot("m", other)}4/x`)).not.toBeNull();
    expect(await store.get(`${"z".repeat(runReplayRoot("m", runId).length)}9/x`)).not.toBeNull();
  });
});
