/**
 * @module MemoStore.clearReplaysFrom's step comes from its caller, as
 * newMemo's does: one that is no step number (NaN, a fraction, a negative
 * or infinite number, a string) is refused and removes nothing, instead of
 * resolving having removed none (NaN, a string) or every one of the run's
 * replay records (-1, -Infinity), or those from the next step (1.5).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, RunId, ValidationError } from "taquba";
import { runReplayRoot } from "../../runtime/workflow/records/kv-keys.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const runId = RunId.parse("run-1");

async function keys(store: MemoryStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) out.push(o.key);
  return out;
}

describe("MemoStore.clearReplaysFrom given what is no step number", () => {
  it("refuses it with a ValidationError and removes none of the run's replay records", async () => {
    const store = new MemoryStore();
    const memos = new MemoStore(store, "m");
    for (const step of [0, 1, 2, 3]) await store.put(`${runReplayRoot("m", runId)}${step}/x`, bytes(String(step)));
    const before = await keys(store);
    for (const bad of [Number.NaN, -1, Number.NEGATIVE_INFINITY, 1.5, 2 ** 53, "2" as unknown as number, undefined as unknown as number]) {
      await expect(memos.clearReplaysFrom(runId, bad), String(bad)).rejects.toBeInstanceOf(ValidationError);
    }
    expect(await keys(store)).toEqual(before);
    // A step number clears from it on, as before.
    await memos.clearReplaysFrom(runId, 2);
    expect((await keys(store)).length).toBe(2);
  });
});
