/**
 * @module Where run result records live: in folders shared by many runs, so
 * ending a run creates no folder of its own on a local directory, and a
 * store whose records were written under the earlier key (in the run memo)
 * still reads, reports and clears them. The runs here end with results too
 * large for their terminal records (see run-result-inline.test.ts).
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, MockClock, StepOutcome, type ObjectStore } from "taquba";
import { sha256Hex } from "../../runtime/workflow/records/codec.js";
import { memoEntryKey, runResultPrefix } from "../../runtime/workflow/records/kv-keys.js";
import { RUN_OUTCOME_MEMO_KEY } from "../../runtime/workflow/records/reserved.js";
import { decodeOutcomeRecord } from "../../runtime/workflow/records/records.js";
import { dec, enc, openEnv, overInline, runnerOf } from "./helpers.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { keysUnder } from "../support/store-keys.js";

const tempDir = useTempDirs("wf-result-layout-");
const MEMO = "workflow-steps-memo";

/** Every folder under `dir`, as paths relative to it. */
async function foldersUnder(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(join(dir, rel), { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    const child = join(rel, d.name);
    out.push(child, ...(await foldersUnder(dir, child)));
  }
  return out;
}

/** Moves the one run result record of `runId` to where earlier versions wrote it, as a store they wrote holds it. */
async function moveToEarlierLayout(store: ObjectStore, runId: string): Promise<string> {
  const [key] = await keysUnder(store, runResultPrefix(MEMO, runId));
  const found = await store.get(key!);
  const { token } = decodeOutcomeRecord(found!.body, key!);
  const legacy = memoEntryKey(MEMO, runId, "run", `${RUN_OUTCOME_MEMO_KEY}:${token}`);
  await store.put(legacy, found!.body);
  await store.delete(key!);
  return legacy;
}

describe("run result record layout", () => {
  it("runs that write no memo entries leave their result records in shared folders, none of their own", async () => {
    const dir = await tempDir();
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(overInline(dec(s.payload)))),
      { store: new LocalStore(dir) },
    );
    try {
      const ids = Array.from({ length: 40 }, (_, i) => `run-${i}`);
      for (const id of ids) await env.runtime.submit({ input: enc(id), runId: id });
      for (const id of ids) expect(dec((await env.runtime.wait(id)).outcome!.result).trimEnd()).toBe(id);
      expect(await keysUnder(env.store, `${MEMO}/memos/`)).toEqual([]);
      const results = await keysUnder(env.store, `${MEMO}/run-results/`);
      expect(results).toHaveLength(ids.length);
      for (const id of ids) expect(results.filter((k) => k.startsWith(runResultPrefix(MEMO, id)))).toHaveLength(1);
      // Below the memo prefix: `run-results`, and one folder per leading hash byte of a run id, whatever the run count.
      const folders = await foldersUnder(join(dir, await onlyChild(dir)));
      const buckets = new Set(ids.map((id) => sha256Hex(id).slice(0, 2)));
      expect(folders.length).toBe(1 + buckets.size);
    } finally {
      await env.stop();
    }
  });

  it("a store whose result records are under the earlier key reads them: wait, outcome, a restart, and a clear", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const runner = runnerOf(async (s) => StepOutcome.succeed(overInline(`done:${dec(s.payload)}`)));
    const first = await openEnv(runner, { store, clock });
    await first.runtime.submit({ input: enc("a"), runId: "old-a" });
    await first.runtime.submit({ input: enc("b"), runId: "old-b" });
    await first.runtime.wait("old-a");
    await first.runtime.wait("old-b");
    await first.stop();
    const legacyA = await moveToEarlierLayout(store, "old-a");
    await moveToEarlierLayout(store, "old-b");

    // A fresh process (nothing kept in memory) finds each record where the earlier version left it.
    const env = await openEnv(runner, { store, clock });
    try {
      const end = await env.runtime.wait("old-a");
      expect(end.resultUnavailable).toBeUndefined();
      expect(dec(end.outcome!.result).trimEnd()).toBe("done:a");
      expect(dec((await env.runtime.outcome("old-a"))!.result).trimEnd()).toBe("done:a");
      expect(dec((await env.runtime.outcome("old-b"))!.result).trimEnd()).toBe("done:b");
      // A new run beside them writes under today's key; both kinds read.
      await env.runtime.submit({ input: enc("c"), runId: "new-c" });
      expect(dec((await env.runtime.wait("new-c")).outcome!.result).trimEnd()).toBe("done:c");
      expect(await keysUnder(store, runResultPrefix(MEMO, "new-c"))).toHaveLength(1);
      // A damaged record under the earlier key is reported as damaged, not as removed.
      await store.put(legacyA, enc("not a record"));
      expect(await env.runtime.wait("old-a")).toMatchObject({ outcome: null, resultUnavailable: "damaged" });
      // Clearing a run removes its record under either key, and the run's end then says so.
      expect(await env.runtime.memoStore.clearMemosForRun("old-b")).toBe(1);
      expect(await keysUnder(store, `${MEMO}/memos/old-b/`)).toEqual([]);
      expect(await env.runtime.wait("old-b")).toMatchObject({ outcome: null, resultUnavailable: "removed" });
      expect(await env.runtime.memoStore.clearMemosForRun("new-c")).toBe(1);
      expect(await env.runtime.wait("new-c")).toMatchObject({ outcome: null, resultUnavailable: "removed" });
    } finally {
      await env.stop();
    }
  });

  it.each([
    ["MemoryStore", async () => new MemoryStore()],
    ["LocalStore", async () => new LocalStore(await tempDir())],
  ] as const)("%s: clearing one run leaves the records of runs that share its folder", async (_name, makeStore) => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(overInline(dec(s.payload)))),
      { store: await makeStore() },
    );
    try {
      // Run ids until two share a folder (256 folders: a few dozen ids suffice).
      const byBucket = new Map<string, string>();
      let pair: [string, string] | undefined;
      for (let i = 0; pair === undefined; i++) {
        const id = `r${i}`;
        const other = byBucket.get(sha256Hex(id).slice(0, 2));
        if (other !== undefined) pair = [other, id];
        else byBucket.set(sha256Hex(id).slice(0, 2), id);
      }
      for (const id of pair) await env.runtime.submit({ input: enc(id), runId: id });
      for (const id of pair) await env.runtime.wait(id);
      await env.runtime.memoStore.clearMemosForRun(pair[0]);
      expect(await env.runtime.wait(pair[0])).toMatchObject({ outcome: null, resultUnavailable: "removed" });
      expect(dec((await env.runtime.wait(pair[1])).outcome!.result).trimEnd()).toBe(pair[1]);
      // With the folder's last record cleared (a local folder goes with it), a run that ends next writes there again.
      await env.runtime.memoStore.clearMemosForRun(pair[1]);
      expect(await keysUnder(env.store, `${MEMO}/run-results/${sha256Hex(pair[0]).slice(0, 2)}/`)).toEqual([]);
      await env.runtime.submit({ input: enc("again"), runId: pair[0] });
      expect(dec((await env.runtime.wait(pair[0])).outcome!.result).trimEnd()).toBe("again");
    } finally {
      await env.stop();
    }
  });
});

/** The one folder directly under `dir` (the memo prefix's). */
async function onlyChild(dir: string): Promise<string> {
  const names = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory() && d.name.startsWith("workflow-steps-memo")).map((d) => d.name);
  expect(names).toHaveLength(1);
  return names[0]!;
}
