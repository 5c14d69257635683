/**
 * @module Schedule records holding a number outside its range: the last
 * tick's time, a buffered tick's time, a failure's tick time, a manual
 * trigger's time and count, the jitter, the step priority and attempt
 * limit. Each is a `StoreCorruptedError` naming the schedule's key. The
 * definition's check refuses the same values with the same functions:
 * before, a schedule took a step priority of -1 (every tick's submission
 * then failed at its enqueue) and a stored jitter of -5 or a NaN tick time
 * was read as it was.
 */
import { pack, unpack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StoreCorruptedError, ValidationError } from "taquba";
import {
  checkScheduleSpec,
  decodeScheduleRecord,
  encodeScheduleRecord,
  readScheduleSpec,
  type ScheduleRecord,
} from "../../runtime/workflow/schedules/schedule-record.js";

const T0 = 1_700_000_000_000;
const NO_TIME = [Number.NaN, Number.POSITIVE_INFINITY, -1, 1e300, 2 ** 53];

function record(): ScheduleRecord {
  const def = checkScheduleSpec(
    readScheduleSpec({ id: "s", cron: "* * * * *", run: { input: new Uint8Array([1]), options: { priority: 2, maxAttemptsPerStep: 3 } } }),
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
    [["lastTickMs"], NO_TIME, [0, T0]],
    [["bufferedTickMs"], NO_TIME, [0, T0]],
    [["lastFailure", "tickMs"], NO_TIME, [0, T0]],
    [["lastTrigger", "atMs"], NO_TIME, [0, T0]],
    [
      ["lastTrigger", "count"],
      [Number.NaN, 0, -1, 1.5, 2 ** 53],
      [1, 7],
    ],
    [["jitterMs"], [Number.NaN, -5, 0.5, 86_400_001], [0, 86_400_000]],
    [["priority"], [Number.NaN, -1, 1.5, 2 ** 32], [0, 2 ** 32 - 1]],
    [["maxAttemptsPerStep"], [Number.NaN, 0, -1, 1.5], [1, 9]],
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
