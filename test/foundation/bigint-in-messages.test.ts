/**
 * Values a caller passes where a string is expected are shown in the refusal
 * as what they are: a bigint (which `JSON.stringify` cannot serialize) or a
 * long string must give the `ValidationError`, not a `TypeError` from
 * building its message.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, ValidationError } from "taquba";
import { checkScheduleId, checkScheduleSpec } from "../../runtime/workflow/schedules/schedule-record.js";
import { childRunId } from "../../runtime/workflow/children/child-runs.js";

function refusal(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe("refusals of values that JSON cannot show", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["a LocalStore directory", () => new LocalStore(12n as never), /directory path, got 12n \(a bigint\)/],
    ["a schedule id", () => checkScheduleId(5n), /schedule id .* got 5n \(a bigint\)/],
    ["a schedule's overlap", () => checkScheduleSpec({ cron: "* * * * *", overlap: 1n } as never), /overlap .* got 1n \(a bigint\)/],
    ["a schedule's catch-up", () => checkScheduleSpec({ cron: "* * * * *", catchUp: 2n } as never), /catchUp .* got 2n \(a bigint\)/],
    ["a parent run's submission", () => childRunId("parent-run", 1, "k", undefined, 3n as never), /submission .* got 3n \(a bigint\)/],
  ];
  for (const [what, call, message] of cases) {
    it(`${what}: ValidationError naming the bigint`, () => {
      const err = refusal(call);
      expect(err).toBeInstanceOf(ValidationError);
      expect(String((err as Error).message) + JSON.stringify((err as ValidationError & { issues?: unknown }).issues ?? "")).toMatch(message);
    });
  }

  it("a long string is shown cut, not whole", () => {
    const err = refusal(() => checkScheduleId("x".repeat(100_000)));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message.length).toBeLessThan(400);
  });
});
