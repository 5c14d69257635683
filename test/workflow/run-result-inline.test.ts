/**
 * @module Small run outcomes are kept in the terminal record the
 * terminating settlement commits, so ending a run writes no object of its
 * own; larger ones are written as run result records. Readers take the
 * inline outcome first and fall back to the records, so stores written
 * before (records only) read as they did, after a restart too, and the
 * inline outcome goes with the terminal record (retention, resubmission).
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, RunNotFoundError, StepError, StepOutcome, type ObjectStore, type PutOptions } from "taquba";
import { encodeValue } from "../../runtime/workflow/records/codec.js";
import { runResultKey, runResultPrefix, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeTerminalRecord, encodeInlineOutcome, encodeOutcomeRecord, encodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { INLINE_OUTCOME_MAX_BYTES, inlineOutcomeOf } from "../../runtime/workflow/runs/inline-outcome.js";
import type { RunId } from "../../runtime/workflow/runs/run-id.js";
import { advanceUntil, dec, enc, openEnv, overInline, runnerOf, type Env } from "./helpers.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { keysUnder } from "../support/store-keys.js";

const tempDir = useTempDirs("wf-result-inline-");
const MEMO = "workflow-steps-memo";
const Q = "workflow-steps";

async function terminalOf(env: Env, runId: string) {
  const bytes = await env.queue.kvGet(terminalRecordKey(Q, runId));
  return bytes === null ? null : decodeTerminalRecord(bytes, runId);
}

/** The largest result (of zero bytes) whose outcome, with no headers, fits the inline bound exactly. */
function resultAtBound(): Uint8Array {
  for (let n = INLINE_OUTCOME_MAX_BYTES; n > 0; n--) {
    const result = new Uint8Array(n);
    if (encodeInlineOutcome({ result, headers: {} }).byteLength === INLINE_OUTCOME_MAX_BYTES) return result;
  }
  throw new Error("no result size meets the bound exactly");
}

/** A runner that ends every run at once with the bytes `results` names for its input. */
const endsWith = (results: (input: string) => Uint8Array) => runnerOf(async (s) => StepOutcome.succeed(results(dec(s.payload))));

describe("run outcomes kept in the terminal record", () => {
  it("a small result writes no object: the local directory holds none after the run, and every reader finds it", async () => {
    const dir = await tempDir();
    const memoPuts: string[] = [];
    const store = new (class extends LocalStore {
      override put(key: string, body: Uint8Array, opts?: PutOptions) {
        if (key.startsWith(`${MEMO}/`)) memoPuts.push(key);
        return super.put(key, body, opts);
      }
    })(dir);
    const env = await openEnv(
      endsWith((i) => enc(`done:${i}`)),
      { store },
    );
    try {
      const ids = Array.from({ length: 12 }, (_, i) => `small-${i}`);
      for (const id of ids) await env.runtime.submit({ input: enc(id), runId: id });
      for (const id of ids) expect(dec((await env.runtime.wait(id)).outcome!.result)).toBe(`done:${id}`);
      expect(await keysUnder(new LocalStore(dir), `${MEMO}/`)).toEqual([]);
      expect(memoPuts).toEqual([]);
      for (const id of ids) {
        expect(dec((await env.runtime.outcome(id))!.result)).toBe(`done:${id}`);
        expect((await terminalOf(env, id))!.inline).toMatchObject({ headers: {} });
      }
    } finally {
      await env.stop();
    }
  });

  it("a result at the bound is kept inline, one byte over is written as a run result record", async () => {
    const at = resultAtBound();
    const over = new Uint8Array(at.byteLength + 1);
    at.fill(1);
    over.fill(2);
    const env = await openEnv(endsWith((i) => (i === "at" ? at : over)));
    try {
      await env.runtime.submit({ input: enc("at"), runId: "at" });
      await env.runtime.submit({ input: enc("over"), runId: "over" });
      expect((await env.runtime.wait("at")).outcome!.result).toEqual(at);
      expect((await env.runtime.wait("over")).outcome!.result).toEqual(over);
      expect((await terminalOf(env, "at"))!.inline?.result).toEqual(at);
      expect(await keysUnder(env.store, runResultPrefix(MEMO, "at"))).toEqual([]);
      expect((await terminalOf(env, "over"))!.inline).toBeUndefined();
      expect(await keysUnder(env.store, runResultPrefix(MEMO, "over"))).toHaveLength(1);
    } finally {
      await env.stop();
    }
  });

  it("counts headers, public error, code and error text in the bound", () => {
    const base = { runId: "r" as RunId, status: "failed" as const, finalStep: 0, headers: {} };
    expect(inlineOutcomeOf({ ...base, error: "x".repeat(INLINE_OUTCOME_MAX_BYTES) })).toBeUndefined();
    expect(inlineOutcomeOf({ ...base, error: "x".repeat(INLINE_OUTCOME_MAX_BYTES - 20) })).toEqual({ headers: {} });
    // A character of three UTF-8 bytes counts three.
    expect(inlineOutcomeOf({ ...base, error: "€".repeat(INLINE_OUTCOME_MAX_BYTES / 2) })).toBeUndefined();
    expect(inlineOutcomeOf({ ...base, headers: { h: "v".repeat(INLINE_OUTCOME_MAX_BYTES) } })).toBeUndefined();
    expect(inlineOutcomeOf({ ...base, publicError: "p".repeat(INLINE_OUTCOME_MAX_BYTES) })).toBeUndefined();
    expect(inlineOutcomeOf({ ...base, errorCode: "c".repeat(INLINE_OUTCOME_MAX_BYTES) })).toBeUndefined();
    expect(inlineOutcomeOf({ ...base, headers: { h: "v" }, publicError: "p", errorCode: "c" })).toEqual({
      headers: { h: "v" },
      publicError: "p",
      errorCode: "c",
    });
  });

  it("a failed run's errors, code and headers read back whole from either place", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        throw StepError.permanent(new Error(dec(s.payload)), { publicMessage: "declined", code: "card_declined" });
      }),
    );
    try {
      const long = "e".repeat(INLINE_OUTCOME_MAX_BYTES + 1);
      await env.runtime.submit({ input: enc("short"), runId: "short", options: { headers: { tenant: "t1" } } });
      await env.runtime.submit({ input: enc(long), runId: "long", options: { headers: { tenant: "t2" } } });
      const short = (await env.runtime.wait("short")).outcome!;
      const kept = (await env.runtime.wait("long")).outcome!;
      expect(short).toMatchObject({ status: "failed", errorKind: "permanent", publicError: "declined", errorCode: "card_declined", headers: { tenant: "t1" } });
      expect(short.error).toContain("short");
      expect(kept).toMatchObject({ status: "failed", errorKind: "permanent", publicError: "declined", errorCode: "card_declined", headers: { tenant: "t2" } });
      expect(kept.error).toContain(long);
      expect((await terminalOf(env, "short"))!.inline).toEqual({ headers: { tenant: "t1" }, publicError: "declined", errorCode: "card_declined" });
      expect((await terminalOf(env, "long"))!.inline).toBeUndefined();
      expect(await keysUnder(env.store, runResultPrefix(MEMO, "long"))).toHaveLength(1);
      expect(await env.runtime.outcome("short")).toEqual(short);
    } finally {
      await env.stop();
    }
  });

  it("a store that refuses every result record put still ends runs with small results, writing none", async () => {
    const inner = new MemoryStore();
    let refused = 0;
    const store: ObjectStore = {
      get: (k) => inner.get(k),
      delete: (k) => inner.delete(k),
      list: (p, o) => inner.list(p, o),
      async put(k, b, o) {
        if (k.startsWith(`${MEMO}/`)) {
          refused++;
          throw new Error("injected memo store outage");
        }
        return inner.put(k, b, o);
      },
    };
    const env = await openEnv(
      endsWith((i) => enc(i)),
      { store },
    );
    try {
      await env.runtime.submit({ input: enc("x"), runId: "r" });
      expect(dec((await env.runtime.wait("r")).outcome!.result)).toBe("x");
      expect(refused).toBe(0);
    } finally {
      await env.stop();
    }
  });

  it("reads after a restart between the end and the read, inline and recorded alike", async () => {
    const store = new LocalStore(await tempDir());
    const runner = endsWith((i) => (i.startsWith("big") ? overInline(i) : enc(i)));
    const first = await openEnv(runner, { store });
    await first.runtime.submit({ input: enc("small"), runId: "small" });
    await first.runtime.submit({ input: enc("big"), runId: "big" });
    await first.runtime.wait("small");
    await first.runtime.wait("big");
    expect((await terminalOf(first, "small"))!.inline?.result).toEqual(enc("small"));
    expect(await keysUnder(store, runResultPrefix(MEMO, "small"))).toEqual([]);
    await first.stop();
    // A fresh process: nothing it kept in memory answers.
    const env = await openEnv(runner, { store, clock: first.clock, start: false });
    try {
      expect(dec((await env.runtime.outcome("small"))!.result)).toBe("small");
      expect(dec((await env.runtime.wait("big")).outcome!.result).trimEnd()).toBe("big");
      expect(await env.runtime.wait("small")).toMatchObject({ termination: { status: "succeeded" }, outcome: { result: enc("small") } });
    } finally {
      await env.stop();
    }
  });

  it("reads a store an earlier version wrote: a small result as a record and a terminal record without the inline outcome", async () => {
    const store = new MemoryStore();
    const runner = endsWith((i) => enc(`done:${i}`));
    const first = await openEnv(runner, { store });
    await first.runtime.submit({ input: enc("a"), runId: "old" });
    const written = (await first.runtime.wait("old")).outcome!;
    // Rewritten as an earlier version left it: the outcome in a run result record under the terminal record's token.
    const t = (await terminalOf(first, "old"))!;
    const earlier = { ...t };
    delete earlier.inline;
    await first.queue.kvPut(terminalRecordKey(Q, "old"), encodeTerminalRecord(earlier));
    await store.put(runResultKey(MEMO, "old", t.token), encodeOutcomeRecord({ token: t.token, outcome: written }));
    await first.stop();
    const env = await openEnv(runner, { store, clock: first.clock });
    try {
      expect((await terminalOf(env, "old"))!.inline).toBeUndefined();
      expect(await env.runtime.wait("old")).toMatchObject({ outcome: { result: enc("done:a") } });
      expect(await env.runtime.outcome("old")).toEqual(written);
      // Its record goes with a clear of its memo, as before.
      expect(await env.runtime.memoStore.clearMemosForRun("old")).toBe(1);
      expect(await env.runtime.wait("old")).toMatchObject({ outcome: null, resultUnavailable: "removed" });
      // A run ending now beside it keeps its result inline.
      await env.runtime.submit({ input: enc("b"), runId: "new" });
      expect(dec((await env.runtime.wait("new")).outcome!.result)).toBe("done:b");
      expect(await keysUnder(store, runResultPrefix(MEMO, "new"))).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("a terminal record whose inline outcome is malformed is reported as damaged, naming its key", async () => {
    const env = await openEnv(endsWith((i) => enc(i)));
    try {
      await env.runtime.submit({ input: enc("x"), runId: "r" });
      await env.runtime.wait("r");
      const t = (await terminalOf(env, "r"))!;
      await env.queue.kvPut(terminalRecordKey(Q, "r"), encodeValue({ ...t, inline: { result: "not bytes", headers: {} } }));
      await expect(env.runtime.outcome("r")).rejects.toThrow(/terminal record has a malformed inline outcome/);
    } finally {
      await env.stop();
    }
  });

  it("the inline outcome goes with the terminal record: kept by a memo clear, removed by retention", async () => {
    const env = await openEnv(
      endsWith((i) => enc(i)),
      { configure: (b) => b.memoRetention(60_000).pollIntervalMs(1_000) },
    );
    try {
      await env.runtime.submit({ input: enc("x"), runId: "r" });
      await env.runtime.wait("r");
      const t0 = env.clock.now();
      // Only the memo store is cleared; the result is part of the run's end.
      await env.runtime.memoStore.clearMemosForRun("r");
      expect(dec((await env.runtime.outcome("r"))!.result)).toBe("x");
      env.clock.advance(60_000);
      await advanceUntil(env.clock, t0 + 61_000, async () => (await env.runtime.status("r")) === null, "r swept");
      expect(await env.queue.kvGet(terminalRecordKey(Q, "r"))).toBeNull();
      expect(await env.runtime.outcome("r")).toBeNull();
      await expect(env.runtime.wait("r")).rejects.toBeInstanceOf(RunNotFoundError);
    } finally {
      await env.stop();
    }
  });
});
