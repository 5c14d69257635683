/**
 * @module The one rule every option reader follows for the fields it
 * checks (docs/concepts.md, "Option objects"): own and inherited enumerable
 * string keys are fields, so a misspelt inherited one is refused like an
 * own one; `Object.prototype`'s, symbols and non-enumerable properties are
 * not fields; a `__proto__` key made by `JSON.parse` is; a getter runs once
 * and one that throws is named; an endless prototype chain is refused.
 * Through the shared readers and through public entry points of two
 * layers (a run's options, a job's enqueue options), nothing written.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, ValidationError, WorkflowRuntime, withCounting } from "../../runtime/index.js";
import { optionFieldNames, optionFields, readExactOptions, refuseUnknownFields } from "../../runtime/option-values.js";
import { refusal } from "../support/refusal.js";

interface Opts {
  limit?: number;
  cursor?: string;
}
const FIELDS = optionFields<Opts>({ limit: true, cursor: true });

describe("which fields of an option object are checked", () => {
  it("own and inherited enumerable string keys; not Object.prototype's, symbols or non-enumerable ones", () => {
    const defaults = { limit: 5, cursr: "x" };
    const o = Object.create(defaults) as Record<string, unknown>;
    o.cursor = "c";
    Object.defineProperty(o, "hidden", { value: 1, enumerable: false });
    (o as Record<symbol, unknown>)[Symbol("tag")] = 1;
    expect(optionFieldNames(o)).toEqual(["cursor", "limit", "cursr"]);
    expect(() => refuseUnknownFields(o, FIELDS, "Opts.", "Opts")).toThrow(
      /Opts\.cursr is not an option \(misspelt\?\); the options are limit, cursor; did you mean cursor\?/,
    );
    // A field shadowed by an own one is listed once; a prototype-less object has only its own.
    expect(optionFieldNames(Object.assign(Object.create({ limit: 1 }), { limit: 2 }))).toEqual(["limit"]);
    expect(optionFieldNames(Object.assign(Object.create(null), { limit: 2 }))).toEqual(["limit"]);
  });

  it("a class instance: its getters on the prototype are read (once), its methods are not fields", () => {
    let reads = 0;
    class Settings {
      get limit(): number {
        reads++;
        return 7;
      }
      describe(): string {
        return "settings";
      }
    }
    expect(readExactOptions(new Settings(), FIELDS, "Opts")).toEqual({ limit: 7 });
    expect(reads).toBe(1);
  });

  it("a field added to Object.prototype is not the caller's: not refused", () => {
    Object.defineProperty(Object.prototype, "limt", { value: 1, enumerable: true, configurable: true, writable: true });
    try {
      expect(() => refuseUnknownFields({ limit: 1 }, FIELDS, "Opts.", "Opts")).not.toThrow();
      expect(optionFieldNames({ limit: 1 })).toEqual(["limit"]);
    } finally {
      delete (Object.prototype as Record<string, unknown>).limt;
    }
  });

  it("__proto__: a JSON key is a field (refused); in a literal it sets the prototype, whose fields are checked", () => {
    const parsed = JSON.parse('{"__proto__": {"limt": 1}, "limit": 1}') as object;
    expect(() => refuseUnknownFields(parsed, FIELDS, "Opts.", "Opts")).toThrow(/Opts\.__proto__ is not an option/);
    const literal = { __proto__: { limt: 1 }, limit: 1 };
    expect(() => refuseUnknownFields(literal, FIELDS, "Opts.", "Opts")).toThrow(/Opts\.limt is not an option .*did you mean limit\?/);
  });

  it("a getter that throws is named; a Proxy with an endless prototype chain is refused, not followed", () => {
    const throwing = {
      get limit(): number {
        throw new Error("no limit today");
      },
    };
    const err = (() => {
      try {
        readExactOptions(throwing, FIELDS, "Opts");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues).toEqual(["reading Opts.limit threw: no limit today"]);
    // A new Proxy at every step up: no cycle to notice, only a bound.
    const endless = (): object => new Proxy({}, { getPrototypeOf: () => endless() });
    expect(() => refuseUnknownFields(endless(), FIELDS, "Opts.", "Opts")).toThrow(
      /listing the fields of Opts threw: its prototype chain is over 32 objects long/,
    );
  });

  it("a field list must name every option of its type, and only those (checked when compiling)", () => {
    // @ts-expect-error: cursor is left out
    optionFields<Opts>({ limit: true });
    // @ts-expect-error: limt is no option of Opts
    optionFields<Opts>({ limit: true, cursor: true, limt: true });
    expect(FIELDS).toEqual(["limit", "cursor"]);
    expect(Object.isFrozen(FIELDS)).toBe(true);
  });
});

describe("the same rule at public entry points, nothing written", () => {
  it("a run's options and a job's enqueue options: an inherited misspelt field is refused, an inherited real one taken", async () => {
    const store = withCounting(new MemoryStore());
    const queue = await Queue.open(store, "app");
    const runtime = WorkflowRuntime.builder(queue, store, { runStep: async () => StepOutcome.succeed(new Uint8Array()) }, NoopTerminalHook).build();
    try {
      store.reset();
      const input = new Uint8Array([1]);
      const run = await refusal(() => runtime.submit({ input, options: Object.create({ priorty: 3 }) }));
      expect(run.issues).toEqual([expect.stringMatching(/^RunOptions\.priorty is not an option .*did you mean priority\?$/)]);
      const job = await refusal(() => queue.enqueue("jobs", input, Object.create({ maxAtempts: 2 })));
      expect(job.issues).toEqual([expect.stringMatching(/^EnqueueOptions\.maxAtempts is not an option .*did you mean maxAttempts\?$/)]);
      expect(store.counts.puts).toBe(0);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0 });
      // Inherited and spelt right: taken.
      const { jobId } = await queue.enqueue("jobs", input, Object.create({ priority: 3 }));
      expect((await queue.view().job(jobId))?.priority).toBe(3);
    } finally {
      await runtime.close();
    }
  });
});
