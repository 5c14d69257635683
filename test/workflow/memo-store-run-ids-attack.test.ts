/**
 * @module A MemoStore's run id and step come from its caller: one that is no
 * run id (a slash, an empty id, a number) or no step number is refused and
 * reads, writes and removes nothing, instead of naming a folder inside
 * another run's memos.
 */
import { describe, expect, it } from "vitest";
import { InvalidRunIdError, MemoStore, MemoryStore, ValidationError } from "taquba";
import { dec, enc } from "./helpers.js";

const PREFIX = "workflow-steps-memo";

async function keysUnder(store: MemoryStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

describe("MemoStore given what is no run id or step", () => {
  it("clearMemosForRun of a run id's step folder is refused and removes none of the run's entries", async () => {
    const store = new MemoryStore();
    const memos = new MemoStore(store, PREFIX);
    await memos.newMemo("a", 0).put("k", enc("kept"));
    await memos.runMemo("a").put("k", enc("kept too"));
    const before = await keysUnder(store, `${PREFIX}/`);
    for (const bad of ["a/0", "a/run", "a/", "", "..", "a/..", 7 as unknown as string]) {
      await expect(memos.clearMemosForRun(bad), JSON.stringify(bad)).rejects.toBeInstanceOf(InvalidRunIdError);
    }
    expect(await keysUnder(store, `${PREFIX}/`)).toEqual(before);
    expect(dec(await memos.newMemo("a", 0).get("k"))).toBe("kept");
  });

  it("newMemo and runMemo refuse a run id with a slash or none, and a step that is no whole number", async () => {
    const store = new MemoryStore();
    const memos = new MemoStore(store, PREFIX);
    for (const bad of ["a/0", "", "a b", "x".repeat(129)]) {
      expect(() => memos.newMemo(bad, 1), JSON.stringify(bad)).toThrow(InvalidRunIdError);
      expect(() => memos.runMemo(bad), JSON.stringify(bad)).toThrow(InvalidRunIdError);
    }
    for (const step of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "0" as unknown as number]) {
      expect(() => memos.newMemo("a", step), String(step)).toThrow(ValidationError);
    }
    // A memo of run "a/0" step 1 would have been filed in run "a"'s step-0 folder.
    expect(await keysUnder(store, `${PREFIX}/`)).toEqual([]);
  });
});
