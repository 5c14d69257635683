/**
 * @module The memo clear a removal still owes (its process killed between
 * its last commit and that clear) for a run of a version before memo sets,
 * whose id was submitted again before the next worker start. The removed
 * run's entries sit outside every memo set; that start clears them, so the
 * run now under the id never reads them: one submitted by this version (a
 * memo set of its own), or one submitted as an earlier version does (no set,
 * reading where the removed run wrote). A result record an earlier version
 * wrote in the run memo for the end now under the id stays.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, type ObjectStore, StepOutcome, type StepRunner } from "taquba";
import { encodeValue } from "../../runtime/workflow/records/codec.js";
import { memoEntryKey, runKey, runResultKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeRunRecord, decodeTerminalRecord, encodeRunRecord } from "../../runtime/workflow/records/records.js";
import { RUN_OUTCOME_MEMO_KEY } from "../../runtime/workflow/records/reserved.js";
import { decodeIndexEntry, encodeIndexEntry, runIndexKey } from "../../runtime/workflow/runs/run-index.js";
import { memoOwedKey } from "../../runtime/workflow/memo/memo-owed.js";
import { rewriteInEarlierFormats } from "../support/earlier-formats.js";
import { type Env, dec, enc, openEnv, overInline, runnerOf, until } from "./helpers.js";

const Q = "workflow-steps";
const MEMO_PREFIX = "workflow-steps-memo";
const OWED = memoOwedKey(Q, "r");
/** A replay record of the removed run, where versions before memo sets kept them. */
const OLD_REPLAY = `${MEMO_PREFIX}/step-outputs/r/0/${"0".repeat(64)}`;

/** Every object key under `prefix`. */
async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

/** The memo and replay objects of run "r" outside every memo set (a set's folder starts with `@`). */
async function unsetObjectsOfR(store: ObjectStore): Promise<string[]> {
  const keys = [...(await keysUnder(store, `${MEMO_PREFIX}/memos/r/`)), ...(await keysUnder(store, `${MEMO_PREFIX}/step-outputs/r/`))];
  return keys.filter((k) => !/\/r\/@/.test(k));
}

/**
 * A runner whose step memoizes in its step memo and the run memo, once the owed clear is paid (so a read of the
 * removed run's entries is not a race with the worker start that pays it), noting each computation.
 */
function memoizingRunner(owedPaid: () => Promise<boolean>, computed: string[], result = (s: string) => s): StepRunner {
  return runnerOf(async (s) => {
    await until(owedPaid, "the owed memo clear paid");
    const own = await s.memo.memoized("k", async () => {
      computed.push("step");
      return "new step";
    });
    const shared = await s.runMemo.memoized("k", async () => {
      computed.push("run");
      return "new run";
    });
    return StepOutcome.succeed(enc(result(`${own}/${shared}`)));
  });
}

/**
 * The store as a removal of legacy run "r" killed after its last commit leaves it: the run's memo entries and
 * replay record where versions before memo sets kept them, and the record of the clear owed (no set named).
 */
async function leaveOwedClear(env: Env): Promise<void> {
  const memos = new MemoStore(env.store, MEMO_PREFIX);
  await memos.newMemo("r", 0).memoized("k", async () => "old step");
  await memos.runMemo("r").memoized("k", async () => "old run");
  await env.store.put(OLD_REPLAY, enc("old replay"));
  await env.queue.kvPut(OWED, encodeValue({ memoPrefix: MEMO_PREFIX }));
}

/** Rewrites run "r"'s run record and listing entry as a version before memo sets wrote them: no memo set. */
async function withoutMemoSet(env: Env): Promise<void> {
  const rk = runKey(Q, "r");
  const { memoSet: _set, ...run } = decodeRunRecord((await env.queue.kvGet(rk))!, rk);
  await env.queue.kvPut(rk, encodeRunRecord(run));
  const ik = runIndexKey(Q, run.submittedAtMs, "r");
  const { memoSet: _entrySet, ...entry } = decodeIndexEntry((await env.queue.kvGet(ik))!, ik);
  await env.queue.kvPut(ik, encodeIndexEntry(entry));
}

describe("a memo clear owed for a removed run without a memo set, its id submitted again since", () => {
  it("clears the removed run's entries at the next worker start; the run submitted since keeps its own set", async () => {
    const store = new MemoryStore();
    const computed: string[] = [];
    let env: Env | undefined;
    const owedPaid = async () => (await env!.queue.kvGet(OWED)) === null;
    const before = await openEnv(memoizingRunner(owedPaid, computed), { store, start: false });
    await leaveOwedClear(before);
    await before.runtime.submit({ runId: "r", input: enc("") });
    await before.stop();

    env = await openEnv(memoizingRunner(owedPaid, computed), { store });
    try {
      expect(dec((await env.runtime.wait("r")).outcome!.result)).toBe("new step/new run");
      expect(computed).toEqual(["step", "run"]);
      await until(async () => (await env!.queue.kvGet(OWED)) === null, "the owed record deleted");
      // Nothing of the removed run is left; the run's own set is.
      expect(await unsetObjectsOfR(store)).toEqual([]);
      expect((await keysUnder(store, `${MEMO_PREFIX}/memos/r/`)).length).toBe(2);
    } finally {
      await env.stop();
    }
  });

  it("clears them before a run submitted since as an earlier version does, reading where they sit, reads them", async () => {
    const store = new MemoryStore();
    const computed: string[] = [];
    let env: Env | undefined;
    const owedPaid = async () => (await env!.queue.kvGet(OWED)) === null;
    const before = await openEnv(memoizingRunner(owedPaid, computed), { store, start: false });
    await leaveOwedClear(before);
    await before.runtime.submit({ runId: "r", input: enc("") });
    await withoutMemoSet(before);
    await before.stop();
    // And its engine files as such a version wrote them.
    await rewriteInEarlierFormats(store);

    env = await openEnv(memoizingRunner(owedPaid, computed), { store });
    try {
      expect((await env.runtime.inspectRun("r"))!.memoSet).toBeUndefined();
      // Read as its own, the removed run's entries would give "old step/old run" and compute nothing.
      expect(dec((await env.runtime.wait("r")).outcome!.result)).toBe("new step/new run");
      expect(computed).toEqual(["step", "run"]);
      expect(await store.get(OLD_REPLAY)).toBeNull();
    } finally {
      await env.stop();
    }
  });

  it("keeps the result record an earlier version wrote in the run memo for the run ended under the id since", async () => {
    const store = new MemoryStore();
    const computed: string[] = [];
    let paid = false;
    const big = (s: string) => dec(overInline(s));
    const ended = await openEnv(
      memoizingRunner(async () => paid, computed, big),
      { store },
    );
    paid = true;
    await ended.runtime.submit({ runId: "r", input: enc("") });
    expect((await ended.runtime.wait("r")).outcome!.status).toBe("succeeded");
    // Its result record moved where an earlier version wrote it: in the run memo, outside every set.
    const tk = terminalRecordKey(Q, "r");
    const { token } = decodeTerminalRecord((await ended.queue.kvGet(tk))!, tk);
    const record = (await store.get(runResultKey(MEMO_PREFIX, "r", token)))!.body;
    await store.delete(runResultKey(MEMO_PREFIX, "r", token));
    await store.put(memoEntryKey(MEMO_PREFIX, "r", "run", `${RUN_OUTCOME_MEMO_KEY}:${token}`), record);
    await leaveOwedClear(ended);
    await ended.stop();

    const env = await openEnv(
      memoizingRunner(async () => true, computed),
      { store },
    );
    try {
      await until(async () => (await env.queue.kvGet(OWED)) === null, "the owed record deleted");
      expect(await store.get(OLD_REPLAY)).toBeNull();
      expect(await unsetObjectsOfR(store)).toEqual([memoEntryKey(MEMO_PREFIX, "r", "run", `${RUN_OUTCOME_MEMO_KEY}:${token}`)]);
      expect(dec((await env.runtime.outcome("r"))!.result)).toBe(big("new step/new run"));
    } finally {
      await env.stop();
    }
  });
});
