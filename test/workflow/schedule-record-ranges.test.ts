/**
 * @module Schedule records holding a number outside its range: the last
 * tick's time, a buffered tick's time, a failure's tick time, a manual
 * trigger's time and count, the jitter, the step priority and attempt
 * limit. Each is a `StoreCorruptedError` naming the schedule's key. The
 * definition's check refuses the same values with the same functions:
 * before, a schedule took a step priority of -1 (every tick's submission
 * then failed at its enqueue) and a stored jitter of -5 or a NaN tick time
 * was read as it was. Also a stored debounce window and a replay record's
 * delays (an `after` trigger's delay, a signal trigger's timeout), which
 * were checked only for being finite numbers.
 */
import { pack, unpack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { MAX_DELAY_MS, StoreCorruptedError, Trigger, ValidationError } from "taquba";
import { decodeReplayRecord } from "../../runtime/workflow/records/records.js";
import { isStoredDelay } from "../../runtime/value-ranges.js";
import {
  checkScheduleSpec,
  decodeScheduleRecord,
  encodeScheduleRecord,
  readScheduleSpec,
  type ScheduleRecord,
} from "../../runtime/workflow/schedules/schedule-record.js";

const T0 = 1_700_000_000_000;
/** The last instant a Date holds: a schedule's next tick past it is none, so a stored time past it would never tick. */
const LAST_DATE_MS = 8.64e15;
const NO_TIME = [Number.NaN, Number.POSITIVE_INFINITY, -1, 1e300, 2 ** 53, LAST_DATE_MS + 1, Number.MAX_SAFE_INTEGER];
const SOME_TIMES = [0, -0, T0, LAST_DATE_MS];

function record(): ScheduleRecord {
  const def = checkScheduleSpec(
    readScheduleSpec({
      id: "s",
      cron: "* * * * *",
      run: { input: new Uint8Array([1]), options: { priority: 2, maxAttemptsPerStep: 3, debounce: { key: "k", periodMs: 1000 } } },
    }),
  );
  return {
    ...def,
    paused: false,
    lastTickMs: T0,
    ticked: true,
    lastRunId: null,
    bufferedTickMs: T0,
    lastFailure: { tickMs: T0, error: "boom" },
    lastTrigger: { atMs: T0, count: 2 },
  };
}

/** The stored record with the field at `path` set to `v`. */
function withValue(path: string[], v: number): Uint8Array {
  const o = unpack(encodeScheduleRecord(record())) as Record<string, unknown>;
  let at = o;
  for (const p of path.slice(0, -1)) at = at[p] as Record<string, unknown>;
  at[path.at(-1)!] = v;
  return new Uint8Array(pack(o));
}

describe("schedule record numbers outside their range", () => {
  it.each([
    [["lastTickMs"], NO_TIME, SOME_TIMES],
    [["bufferedTickMs"], NO_TIME, SOME_TIMES],
    [["lastFailure", "tickMs"], NO_TIME, SOME_TIMES],
    [["lastTrigger", "atMs"], NO_TIME, SOME_TIMES],
    [
      ["lastTrigger", "count"],
      [Number.NaN, 0, -1, 1.5, 2 ** 53],
      [1, 7],
    ],
    [["jitterMs"], [Number.NaN, -5, 0.5, 86_400_001], [0, 86_400_000]],
    [["priority"], [Number.NaN, -1, 1.5, 2 ** 32], [0, 2 ** 32 - 1]],
    [["maxAttemptsPerStep"], [Number.NaN, 0, -1, 1.5], [1, 9]],
    [
      ["debounce", "periodMs"],
      [Number.NaN, Number.POSITIVE_INFINITY, 0, -1, 1.5, 86_400_001],
      [1, 86_400_000],
    ],
  ])("%s is refused as damage naming the schedule's key, and read at the edges of its range", (path, bad, good) => {
    for (const v of bad) {
      let err: unknown;
      try {
        decodeScheduleRecord(withValue(path, v), "workflow/schedules/q/s");
      } catch (e) {
        err = e;
      }
      expect(err, `${path.join(".")} = ${v}`).toBeInstanceOf(StoreCorruptedError);
      expect((err as StoreCorruptedError).objectKey).toBe("workflow/schedules/q/s");
      expect((err as Error).message).toMatch(/outside its range/);
    }
    for (const v of good) expect(() => decodeScheduleRecord(withValue(path, v), "k"), `${path.join(".")} = ${v}`).not.toThrow();
  });

  it("a tick time past the last instant a Date holds is named with its schedule, its range and the way out", () => {
    for (const v of [LAST_DATE_MS + 1, Number.MAX_SAFE_INTEGER]) {
      let err: unknown;
      try {
        decodeScheduleRecord(withValue(["lastTickMs"], v), "workflow/schedules/q/nightly");
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(StoreCorruptedError);
      const message = (err as Error).message;
      expect(message).toContain(
        `the record of schedule "nightly" has a last tick time of ${v}, outside its range (not a time in ms from 0 to 8640000000000000`,
      );
      expect(message).toContain('remove it with schedules.remove("nightly")');
    }
  });

  it.each([
    [["lastTickMs"], (r: ScheduleRecord, v: number) => ({ ...r, lastTickMs: v })],
    [["bufferedTickMs"], (r: ScheduleRecord, v: number) => ({ ...r, bufferedTickMs: v })],
    [["lastFailure", "tickMs"], (r: ScheduleRecord, v: number) => ({ ...r, lastFailure: { tickMs: v, error: "boom" } })],
    [["lastTrigger", "atMs"], (r: ScheduleRecord, v: number) => ({ ...r, lastTrigger: { atMs: v, count: 1 } })],
  ])("%s outside its range is refused at write, naming the schedule, and written at the edges", (path, set) => {
    for (const v of NO_TIME) {
      expect(() => encodeScheduleRecord(set(record(), v)), `${path.join(".")} = ${v}`).toThrow(ValidationError);
      expect(() => encodeScheduleRecord(set(record(), v)), `${path.join(".")} = ${v}`).toThrow(/schedule "s" has .* outside its range .*; nothing was written/);
    }
    for (const v of SOME_TIMES) {
      const read = decodeScheduleRecord(encodeScheduleRecord(set(record(), v)), "k");
      let at: unknown = read;
      for (const p of path) at = (at as Record<string, unknown>)[p];
      // -0 is written as 0, the same tick.
      expect(at === v, `${path.join(".")} = ${v} read as ${String(at)}`).toBe(true);
    }
  });

  it("a step priority of -1 (what an earlier definition check took) is named with its schedule, its range and the way out", () => {
    let err: unknown;
    try {
      decodeScheduleRecord(withValue(["priority"], -1), "workflow/schedules/q/nightly");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreCorruptedError);
    const message = (err as Error).message;
    expect(message).toContain('the record of schedule "nightly" has a step priority of -1, outside its range (a whole number from 0 to 4294967295');
    expect(message).toContain('remove it with schedules.remove("nightly")');
    expect(message).toContain("upsert it again");
  });

  it("a definition's debounce window is refused by the same check the record's read uses", () => {
    for (const periodMs of [0, -1, 1.5, 86_400_001, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(
        () =>
          checkScheduleSpec(
            readScheduleSpec({ id: "s", cron: "* * * * *", run: { input: new Uint8Array([1]), options: { debounce: { key: "k", periodMs } } } }),
          ),
        String(periodMs),
      ).toThrow(/debounce\.periodMs must be an integer from 1 to 86400000/);
    }
  });

  it("a definition's step priority and jitter are refused by the same checks", () => {
    const define = (options: Record<string, unknown>, jitterMs?: number) => () =>
      checkScheduleSpec(readScheduleSpec({ id: "s", cron: "* * * * *", jitterMs, run: { input: new Uint8Array([1]), options } }));
    for (const p of [-1, 1.5, 2 ** 32]) {
      expect(define({ priority: p }), String(p)).toThrow(ValidationError);
      expect(define({ priority: p }), String(p)).toThrow(/run\.options\.priority must be an integer from 0 to 4294967295/);
    }
    for (const j of [-5, 0.5, 86_400_001]) expect(define({}, j), String(j)).toThrow(/jitterMs must be an integer from 0 to 86400000/);
    expect(define({ priority: 0 }, 86_400_000)).not.toThrow();
  });
});

describe("replay record delays outside their range", () => {
  const replay = (when: Record<string, unknown>) =>
    new Uint8Array(pack({ storedAtMs: T0, outcome: { kind: "continue", payload: new Uint8Array([1]), when }, effects: { puts: [], deletes: [] } }));

  it.each([
    ["an after trigger's delay", (v: number) => ({ kind: "after", delayMs: v }), /after trigger whose delay .* is not ms from 0 to 315360000000/],
    [
      "a signal trigger's timeout",
      (v: number) => ({ kind: "onSignal", correlationKey: "k", timeoutMs: v }),
      /signal trigger whose timeout .* is not ms from 0 to 315360000000/,
    ],
  ])("%s is refused as damage naming the record, and read at the edges of its range", (_what, when, says) => {
    for (const v of [Number.NaN, Number.POSITIVE_INFINITY, -1, MAX_DELAY_MS + 1, 1e30]) {
      let err: unknown;
      try {
        decodeReplayRecord(replay(when(v)), "the-key");
      } catch (e) {
        err = e;
      }
      expect(err, String(v)).toBeInstanceOf(StoreCorruptedError);
      expect((err as StoreCorruptedError).objectKey).toBe("the-key");
      expect((err as Error).message, String(v)).toMatch(says);
    }
    for (const v of [0, 0.5, MAX_DELAY_MS]) expect(() => decodeReplayRecord(replay(when(v)), "k"), String(v)).not.toThrow();
  });

  it("the delays a step may return are the ones a replay record's read takes", () => {
    for (const v of [0, 0.5, MAX_DELAY_MS]) {
      expect(() => Trigger.after(v)).not.toThrow();
      expect(isStoredDelay(v)).toBe(true);
    }
    for (const v of [-1, MAX_DELAY_MS + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => Trigger.after(v), String(v)).toThrow(ValidationError);
      expect(isStoredDelay(v), String(v)).toBe(false);
    }
  });
});
