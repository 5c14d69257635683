/**
 * @module A refused run option is named by the path its caller wrote: a
 * child's start (`children.start.options.headers`), a schedule's run
 * options, a run group's options; a submission's own stay `RunOptions`.
 * And a run group's members are read once each: a getter answering another
 * key on a second read cannot pass the checks under one key and run under
 * another.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, ValidationError } from "taquba";
import { readRunOptions } from "../../runtime/workflow/runs/run-option-fields.js";
import { checkRunOptions } from "../../runtime/workflow/runs/submit.js";
import { checkScheduleSpec, readScheduleSpec } from "../../runtime/workflow/schedules/schedule-record.js";
import { checkMembers, manifestOptions, readGroupOptions } from "../../runtime/workflow/groups/run-group.js";
import type { RunOptions } from "../../runtime/workflow/runs/run-types.js";
import type { ScheduleSpec } from "../../runtime/workflow/schedules/schedule-types.js";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as Error).message;
  }
  throw new Error("expected a refusal");
}

const badHeaders = { headers: { tenant: 5 } } as unknown as RunOptions;

describe("the path a refused run option is named by", () => {
  it("a submission's options: RunOptions", () => {
    expect(messageOf(() => readRunOptions(badHeaders))).toMatch(/^header "tenant" in RunOptions\.headers must be a string, got 5$/);
    expect(messageOf(() => checkRunOptions({ maxAttemptsPerStep: 0 }))).toMatch(/^RunOptions\.maxAttemptsPerStep must be/);
  });

  it("a schedule's run options: the schedule and run.options", () => {
    const spec = (options: unknown) => ({ id: "s", cron: "* * * * *", run: { input: enc("x"), options } }) as ScheduleSpec;
    expect(messageOf(() => checkScheduleSpec(readScheduleSpec(spec(badHeaders))))).toBe(
      'header "tenant" in schedule "s": run.options.headers must be a string, got 5',
    );
    expect(messageOf(() => checkScheduleSpec(readScheduleSpec(spec({ flow: { rule: "" } }))))).toMatch(
      /^schedule "s": run\.options\.flow\.rule must be a string of 1 to 512 characters/,
    );
    expect(messageOf(() => checkScheduleSpec(readScheduleSpec(spec({ debounce: { key: "k", periodMs: 0 } }))))).toMatch(
      /^schedule "s": run\.options\.debounce\.periodMs must be/,
    );
  });

  it("a run group's options: the group's RunOptions", () => {
    expect(messageOf(() => manifestOptions(readGroupOptions(badHeaders)))).toBe('header "tenant" in the group\'s RunOptions.headers must be a string, got 5');
    expect(messageOf(() => manifestOptions(readGroupOptions({ flow: { rule: "" } })))).toMatch(/^the group's RunOptions\.flow\.rule must be/);
    expect(messageOf(() => manifestOptions(readGroupOptions({ priority: 1.5 })))).toMatch(/^the group's RunOptions\.priority must be an integer/);
    expect(messageOf(() => manifestOptions(readGroupOptions({ runAt: Number.NaN })))).toMatch(/^the group's RunOptions\.runAt/);
  });

  it("a child's start: children.start.options", async () => {
    const refused: string[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        for (const options of [badHeaders, { maxAttemptsPerStep: 0 }, { flow: { rule: "" } }, { runAt: Number.NaN }, { headers: { "workflow.x": "1" } }]) {
          const e = await s.children.start({ input: enc("child"), options: options as RunOptions }).catch((err: unknown) => err);
          refused.push(e instanceof Error ? `${e.name}: ${e.message}` : "started");
        }
        return StepOutcome.succeed(enc("done"));
      }),
    );
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      await until(() => refused.length === 5, "the parent's attempts");
      expect(refused.slice(0, 4)).toEqual([
        'ValidationError: header "tenant" in children.start.options.headers must be a string, got 5',
        expect.stringMatching(/^ValidationError: children\.start\.options\.maxAttemptsPerStep must be/),
        expect.stringMatching(/^ValidationError: children\.start\.options\.flow\.rule must be/),
        expect.stringMatching(/^ValidationError: children\.start\.options\.runAt/),
      ]);
      // A reserved header is its own error, naming the header.
      expect(refused[4]).toMatch(/workflow\.x/);
    } finally {
      await env.stop();
    }
  });
});

describe("a run group's members", () => {
  it("are read once each: what is checked is what is kept", () => {
    let reads = 0;
    const member = {
      get key(): string {
        reads++;
        return reads === 1 ? "a" : "a".repeat(600);
      },
      input: enc("x"),
    };
    const kept = checkMembers([member, { key: "b", input: enc("y") }]);
    expect(kept).toEqual([
      { key: "a", input: enc("x") },
      { key: "b", input: enc("y") },
    ]);
    expect(reads).toBe(1);
  });

  it("a key answering another value on each read is refused as a duplicate by its first answers, not passed", () => {
    let n = 0;
    const shifty = {
      get key(): string {
        n++;
        return n % 2 === 1 ? "same" : `other-${n}`;
      },
      input: enc("x"),
    };
    expect(messageOf(() => checkMembers([{ key: "same", input: enc("y") }, shifty]))).toBe(
      'member key "same" appears twice; keys identify members within a group',
    );
  });

  it("a member that is no object, a getter that throws and a Proxy claiming a huge length are refused by name", () => {
    expect(messageOf(() => checkMembers([5 as never]))).toBe("member 0 of the group must be an object { key, input }, got 5");
    const throwing = {
      get key(): string {
        throw new Error("no key");
      },
      input: enc("x"),
    };
    const err = (() => {
      try {
        checkMembers([throwing]);
      } catch (e) {
        return e as ValidationError;
      }
    })();
    expect(err?.issues).toEqual(["reading member 0 of the group.key threw: no key"]);
    const huge = new Proxy([], { get: (t, k) => (k === "length" ? 2 ** 32 - 1 : Reflect.get(t, k)) });
    expect(messageOf(() => checkMembers(huge))).toMatch(/^the group's members must be an array of \{ key, input \} members of at most 10000 entries/);
  });
});
