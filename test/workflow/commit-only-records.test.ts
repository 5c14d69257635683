/**
 * @module The runtime's records staged straight into a commit
 * (`CommitOnlyBytes`): the bytes stored are the bytes `encodeValue` writes;
 * a view of the encoder's chunk goes only to an engine that copies what it
 * commits (an engine that keeps values gets arrays of their own); and a
 * view staged before the chunk turns over, before a failed commit, or
 * before a store fault and a reopen, still commits its own bytes.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, RunId, StepOutcome, type StepRunner } from "taquba";
import { SettlementEffects } from "../../runtime/queue/effects.js";
import { bytesEqual } from "../../runtime/store/bytes-equal.js";
import { decodeValue, encodeValue, sha256Hex } from "../../runtime/workflow/records/codec.js";
import { type CommitOnlyBytes, encodeForCommit, stageCommitOnly, stageCommitOnlyOnce } from "../../runtime/workflow/records/commit-bytes.js";
import {
  decodeTerminalRecord,
  encodeRunRecord,
  encodeSignalWait,
  encodeStepPointer,
  encodeTerminalRecord,
  runRecordForCommit,
  signalWaitForCommit,
  stepPointerForCommit,
  terminalRecordForCommit,
} from "../../runtime/workflow/records/records.js";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeStepRecord, encodeStepRecord, encodeStepRecordForCommit, stepHistoryKey, type StepRecord } from "../../runtime/workflow/runs/history-records.js";
import { encodeIndexEntry, indexEntryForCommit } from "../../runtime/workflow/runs/run-index.js";
import type { Known } from "../../runtime/workflow/steps/step-carry.js";
import { failWhen } from "../support/failing-store.js";
import { type TestRandom, testRandom } from "../support/seed.js";
import { enc, openEnv } from "./helpers.js";

const COPIES = { copiesCommittedValues: true };
const KEEPS = { copiesCommittedValues: false };

/** The bytes behind `b`, for the test's eyes only (the runtime never reads them). */
const bytesOf = (b: CommitOnlyBytes): Uint8Array => b as unknown as Uint8Array;
/** Whether `b` is a view of memory other arrays share, not an array of its own. */
const isView = (b: Uint8Array): boolean => b.byteOffset !== 0 || b.buffer.byteLength !== b.byteLength;

function randomString(r: TestRandom): string {
  const kind = r.int(4);
  const n = kind === 3 ? 300 + r.int(200) : r.int(40);
  let s = "";
  for (let i = 0; i < n; i++)
    s += kind === 1 ? String.fromCharCode(0x80 + r.int(0x700)) : kind === 2 && i % 5 === 0 ? "é☃" : String.fromCharCode(0x20 + r.int(0x5f));
  return s;
}

function randomNumber(r: TestRandom): number {
  const forms = [
    r.int(128),
    -r.int(40),
    r.int(70_000),
    -r.int(70_000) * 1000,
    2 ** 40 + r.int(1000),
    r.random() * 1e6,
    -r.random(),
    1e30,
    Number.MAX_SAFE_INTEGER,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -Number.MAX_VALUE,
    -0,
  ];
  return forms[r.int(forms.length)]!;
}

/** A plain value: maps (up to 20 entries, so map16 too), lists, strings, numbers, booleans, null and bytes (some past the chunk). */
function randomValue(r: TestRandom, depth: number): unknown {
  const k = r.int(depth > 2 ? 5 : 8);
  if (k === 0) return randomString(r);
  if (k === 1) return randomNumber(r);
  if (k === 2) return r.int(2) === 0;
  if (k === 3) return null;
  if (k === 4) {
    const big = r.int(40);
    const b = new Uint8Array(big === 0 ? 20_000 + r.int(10_000) : big === 1 ? 2_100 + r.int(1_000) : r.int(100));
    for (let i = 0; i < Math.min(b.length, 100); i++) b[i] = r.int(256);
    b.fill(r.int(256), 100);
    return b;
  }
  if (k === 5) return Array.from({ length: r.int(18) }, () => randomValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  const n = r.int(21);
  for (let i = 0; i < n; i++) o[`${randomString(r).slice(0, 8)}${i}`] = randomValue(r, depth + 1);
  return o;
}

function randomStepRecord(r: TestRandom, step: number): StepRecord {
  const attempts = Array.from({ length: 1 + r.int(3) }, (_, i) => ({
    attempt: i + 1,
    startedAtMs: 1_700_000_000_000 + r.int(1e6),
    endedAtMs: 1_700_000_000_000 + r.int(1e6),
    outcome: (i === 0 ? "continued" : "retried") as "continued",
    ...(r.int(3) === 0 ? { error: randomString(r) } : {}),
  }));
  return {
    step,
    name: r.int(2) === 0 ? undefined : randomString(r).slice(0, 12),
    payloadBytes: r.int(5000),
    attempts,
    attemptsDropped: r.int(3),
    memoKeys: r.int(3) === 0 ? [randomString(r)] : [],
    memoKeysWritten: r.int(4),
    kvPuts: r.int(2) === 0 ? ["app/a", randomString(r)] : [],
    kvDeletes: r.int(3) === 0 ? ["app/b"] : [],
    kvEffects: r.int(5),
    next: r.int(2) === 0 ? new Uint8Array(r.int(90)).fill(7) : undefined,
  } as StepRecord;
}

/** `[encoded for a commit, as stored before]` pairs of every record kind the runtime stages this way. */
function randomRecords(r: TestRandom, i: number): Array<[CommitOnlyBytes, Uint8Array]> {
  const target = r.int(4) === 0 ? KEEPS : COPIES;
  const value = randomValue(r, 0);
  const step = randomStepRecord(r, i);
  const run = {
    runId: `run-${i}`,
    submittedAtMs: 1_700_000_000_000 + i,
    inputSha256: sha256Hex(String(i)),
    incarnation: `01J${i}`,
    submission: `01J${i}`,
    headers: { h: randomString(r) },
    memoPrefix: "m",
    priority: r.int(2) === 0 ? undefined : r.int(10),
  };
  const terminal = {
    runId: RunId.parse(`run-${i}`),
    status: "succeeded" as const,
    finalStep: r.int(100),
    terminatedAtMs: 1_700_000_000_000 + r.int(1e6),
    incarnation: `01J${i}`,
    token: randomString(r),
    memoPrefix: "m",
    submittedAtMs: 1_700_000_000_000,
    ...(r.int(2) === 0 ? { inline: { result: new Uint8Array(r.int(80)), headers: { k: randomString(r) }, publicError: undefined } } : {}),
  };
  const entry = {
    submittedAtMs: 1_700_000_000_000 + i,
    headers: { h: randomString(r) },
    inputSha256: "ab",
    ...(r.int(2) === 0 ? { workflow: "w", kind: "workflow" as const } : {}),
  };
  const pointer = { step: r.int(1000), jobId: `01J${i}`, ...(r.int(2) === 0 ? { name: randomString(r).slice(0, 10) } : {}) };
  const wait = { jobId: `01J${i}`, runId: `run-${i}`, step: r.int(100) };
  return [
    [encodeForCommit(value, target), encodeValue(value)],
    [encodeStepRecordForCommit(step, target), encodeStepRecord(step)],
    [runRecordForCommit(run, target), encodeRunRecord(run)],
    [terminalRecordForCommit(terminal, target), encodeTerminalRecord(terminal)],
    [indexEntryForCommit(entry, target), encodeIndexEntry(entry)],
    [stepPointerForCommit(pointer, target), encodeStepPointer(pointer)],
    [signalWaitForCommit(wait, target), encodeSignalWait(wait)],
  ];
}

describe("records encoded for a commit", () => {
  it("are the bytes encodeValue writes, over seeded random records, every view intact after the chunk turned over many times", () => {
    const r = testRandom("commit-only bytes");
    const all: Array<[CommitOnlyBytes, Uint8Array]> = [];
    for (let i = 0; i < 500; i++) all.push(...randomRecords(r, i));
    let views = 0;
    const differing: number[] = [];
    all.forEach(([staged, stored], i) => {
      const b = bytesOf(staged);
      if (isView(b)) views++;
      if (!bytesEqual(b, stored)) differing.push(i);
    });
    expect(differing).toEqual([]);
    // Most records fit a view: the chunk turned over many times under the views kept here.
    expect(views).toBeGreaterThan(all.length / 2);
    const step = randomStepRecord(r, 7);
    expect(decodeStepRecord(bytesOf(encodeStepRecordForCommit(step, COPIES)), "k")).toEqual(decodeStepRecord(encodeStepRecord(step), "k"));
  });

  it("are arrays of their own for a queue whose engine keeps what it commits, and views only where it copies", async () => {
    for (const recordCacheBytes of [null, undefined]) {
      const queue = await Queue.open(new MemoryStore(), "q", recordCacheBytes === null ? { recordCacheBytes } : {});
      try {
        expect(queue.copiesCommittedValues).toBe(recordCacheBytes !== null);
        const effects = new SettlementEffects();
        const record = randomStepRecord(testRandom("own arrays"), 3);
        // Staged from an earlier encoding's chunk offset, so a view could not pass for an array of its own.
        encodeForCommit({ pad: "x" }, queue);
        const staged = encodeStepRecordForCommit(record, queue);
        stageCommitOnlyOnce(effects, "hist/3", staged);
        stageCommitOnly(effects, "run", runRecordForCommit({ runId: "r", submittedAtMs: 1, inputSha256: "a", incarnation: "i", headers: {} }, queue));
        expect(isView(bytesOf(staged))).toBe(recordCacheBytes !== null);
        expect(await queue.kvCompareAndApply([], effects)).toBe(true);
        const held = queue.kvGetNow("hist/3")!;
        expect(held).toEqual(encodeStepRecord(record));
        // What the engine holds never shares memory with the encoder's chunk.
        if (recordCacheBytes === null) expect(isView(held)).toBe(false);
        else expect(held.buffer).not.toBe(bytesOf(staged).buffer);
      } finally {
        await queue.close();
      }
    }
  });

  it("commit their own bytes after a failed commit, a turnover of the chunk, and a retry, and while a commit is pending", async () => {
    const r = testRandom("failed commit and retry");
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      const value = { note: randomString(r), list: [1, 2, 3], bytes: new Uint8Array(50).fill(9) };
      const effects = new SettlementEffects();
      stageCommitOnly(effects, "app/a", encodeForCommit(value, queue));
      // Refused: the guard key holds no value, so nothing commits.
      expect(await queue.kvCompareAndApply([{ key: "guard", value: new Uint8Array([1]) }], effects)).toBe(false);
      expect(await queue.kvGet("app/a")).toBeNull();
      // The chunk turns over (views handed out past its end, and a value too large for it) while the effects wait.
      for (let i = 0; i < 400; i++) encodeForCommit({ i, filler: "f".repeat(100) }, queue);
      encodeForCommit({ large: new Uint8Array(40_000).fill(1) }, queue);
      expect(await queue.kvCompareAndApply([], effects)).toBe(true);
      expect(await queue.kvGet("app/a")).toEqual(encodeValue(value));
      expect(decodeValue((await queue.kvGet("app/a"))!)).toEqual(value);

      // A commit still waiting for its WAL write while the chunk turns over again.
      const later = new SettlementEffects();
      const record = randomStepRecord(r, 5);
      stageCommitOnlyOnce(later, "hist/5", encodeStepRecordForCommit(record, queue));
      const pending = queue.kvCompareAndApply([], later);
      for (let i = 0; i < 400; i++) encodeForCommit({ i, filler: "h".repeat(100) }, queue);
      expect(await pending).toBe(true);
      expect(await queue.kvGet("hist/5")).toEqual(encodeStepRecord(record));
    } finally {
      await queue.close();
    }
  });

  it("commit their own bytes on a reopened queue after a store fault failed the first commit", async () => {
    const r = testRandom("store fault and reopen");
    const inner = new MemoryStore();
    let failing = false;
    const store = failWhen(inner, (call, key) => (failing && call === "put" && key.includes("/wal/") ? new Error("injected WAL put failure") : undefined));
    const first = await Queue.open(store, "q", { flushIntervalMs: 1, engineOptions: { retry: { attempts: 1 } } });
    const record = randomStepRecord(r, 11);
    const effects = new SettlementEffects();
    stageCommitOnlyOnce(effects, "hist/11", encodeStepRecordForCommit(record, first));
    failing = true;
    await expect(first.kvCompareAndApply([], effects)).rejects.toThrow();
    await first.close().catch(() => undefined);
    failing = false;
    for (let i = 0; i < 300; i++) encodeForCommit({ i, filler: "g".repeat(120) }, first);

    const second = await Queue.open(store, "q", { flushIntervalMs: 1 });
    try {
      // Whatever the failed commit left, the retry on the reopened queue commits the same bytes.
      expect(await second.kvCompareAndApply([], effects)).toBe(true);
      expect(await second.kvGet("hist/11")).toEqual(encodeStepRecord(record));
    } finally {
      await second.close();
    }
    const third = await Queue.open(store, "q");
    try {
      expect(decodeStepRecord((await third.kvGet("hist/11"))!, "hist/11")).toEqual(decodeStepRecord(encodeStepRecord(record), "k"));
    } finally {
      await third.close();
    }
  });

  it("store a workflow's history entries, run and terminal records as before, over an engine that copies and one that keeps", async () => {
    const runner: StepRunner = {
      async runStep(s) {
        if (s.stepNumber < 3) return StepOutcome.continueNow(enc(`step ${s.stepNumber + 1} of run ${"x".repeat(60)}`));
        return StepOutcome.succeed(enc("done"));
      },
    };
    for (const recordCacheBytes of [undefined, null]) {
      const env = await openEnv(runner, { queueOptions: recordCacheBytes === null ? { recordCacheBytes } : {} });
      try {
        await env.runtime.submit({ input: enc("in"), runId: "r1" });
        const w = await env.runtime.wait("r1");
        expect(w.outcome?.status).toBe("succeeded");
        for (let step = 0; step <= 3; step++) {
          const key = stepHistoryKey("workflow-steps", "r1", step);
          const bytes = env.queue.kvGetNow(key);
          expect(bytes, key).not.toBeNull();
          if (recordCacheBytes === null) expect(isView(bytes!)).toBe(false);
          const h = decodeStepRecord(bytes!, key);
          expect(h.step).toBe(step);
          // Written as before: the stored bytes are the old encoder's bytes of what they decode to.
          expect(bytesEqual(bytes!, encodeStepRecord(h))).toBe(true);
        }
        const tk = terminalRecordKey("workflow-steps", "r1");
        const terminal = env.queue.kvGetNow(tk);
        expect(terminal).not.toBeNull();
        if (recordCacheBytes === null) expect(isView(terminal!)).toBe(false);
        expect(bytesEqual(encodeTerminalRecord(decodeTerminalRecord(terminal!, tk)), terminal!)).toBe(true);
      } finally {
        await env.stop();
      }
    }
  });

  it("cannot be kept, compared, hashed or decoded by mistake (checked by the type checker)", () => {
    const staged = encodeForCommit({ a: 1 }, COPIES);
    const use = () => {
      // @ts-expect-error not a Uint8Array: it cannot be decoded
      decodeValue(staged);
      // @ts-expect-error nor hashed
      sha256Hex(staged);
      // @ts-expect-error nor compared
      bytesEqual(staged, new Uint8Array(0));
      // @ts-expect-error nor kept as a carried record's bytes
      const kept: Known<number> = { bytes: staged, value: 1 };
      // @ts-expect-error nor staged through the caller's kvPut
      new SettlementEffects().kvPut("k", staged);
      return kept;
    };
    expect(typeof use).toBe("function");
  });
});
