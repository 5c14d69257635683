/**
 * @module Duck typing (a clock, a logger, a store, a handler told by its
 * methods) and a polluted `Object.prototype`: a method found only there, or
 * on `Function.prototype`, is set for every object of the process (or is
 * `toString`, which every object has), so it makes no object a clock or a
 * logger; it is not read at all, so a getter there never runs. Methods of
 * the object itself, of a class or of a prototype below still count. Each
 * test pollutes only while the check runs and restores the prototype in
 * `finally`.
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../runtime/errors.js";
import { hasMethods, readOptions } from "../../runtime/option-values.js";
import { fullLogger, readLogger } from "../../runtime/logger.js";
import { readOpenOptions } from "../../runtime/queue/open-options.js";

/** Runs `check` with `fields` defined on `base` (by default `Object.prototype`), removed again whatever `check` did. */
function withFields<T>(fields: PropertyDescriptorMap, check: () => T, base: object = Object.prototype): T {
  Object.defineProperties(base, Object.fromEntries(Object.entries(fields).map(([k, d]) => [k, { configurable: true, ...d }])));
  try {
    return check();
  } finally {
    for (const k of Object.keys(fields)) delete (base as Record<string, unknown>)[k];
  }
}

const now = () => 1;

class TestClock {
  now(): number {
    return 5;
  }
}

describe("hasMethods", () => {
  it("takes no method only Object.prototype holds: {} is no clock", () => {
    expect(withFields({ now: { value: now, enumerable: true } }, () => hasMethods({}, ["now"]))).toBe(false);
    expect(withFields({ get: { value: now }, put: { value: now } }, () => hasMethods({ list: now, delete: now }, ["get", "put", "list", "delete"]))).toBe(
      false,
    );
    // Every object's own `toString` is no method of a handler that lacks one.
    expect(hasMethods({}, ["toString"])).toBe(false);
    expect(hasMethods({ toString: () => "x" }, ["toString"])).toBe(true);
  });

  it("takes no method only Function.prototype holds, for a function or an object inheriting from it", () => {
    const fnLike = Object.create(Function.prototype) as object;
    expect(withFields({ now: { value: now } }, () => [hasMethods(() => 0, ["now"]), hasMethods(fnLike, ["now"])], Function.prototype)).toEqual([false, false]);
  });

  it("takes the object's own methods, a class's and a prototype's below, while polluted", () => {
    const polluted = { now: { value: () => 99, enumerable: true } };
    expect(withFields(polluted, () => hasMethods({ now }, ["now"]))).toBe(true);
    expect(withFields(polluted, () => hasMethods(new TestClock(), ["now"]))).toBe(true);
    expect(withFields(polluted, () => hasMethods(Object.create({ now }), ["now"]))).toBe(true);
    expect(withFields(polluted, () => hasMethods(Object.assign(Object.create(null) as object, { now }), ["now"]))).toBe(true);
  });

  it("never runs a getter Object.prototype holds under the method's name", () => {
    let ran = 0;
    const getter = {
      now: {
        get() {
          ran++;
          return now;
        },
      },
    };
    expect(withFields(getter, () => hasMethods({}, ["now"]))).toBe(false);
    expect(withFields(getter, () => hasMethods(new TestClock(), ["now"]))).toBe(true);
    expect(ran).toBe(0);
  });

  it("a clock option of {} is refused at Queue.open's options while Object.prototype has now()", () => {
    expect(() => withFields({ now: { value: now } }, () => readOpenOptions({ clock: {} }))).toThrow(
      /OpenOptions\.clock must be an object with a now\(\) method/,
    );
    expect(() => withFields({ now: { value: now } }, () => readOpenOptions({ clock: new TestClock() }))).not.toThrow();
  });
});

describe("loggers", () => {
  it("log at no level only Object.prototype holds; their own levels still log", () => {
    const calls: string[] = [];
    const polluted = { info: { value: () => calls.push("polluted info") }, warn: { value: () => calls.push("polluted warn") } };
    const read = withFields(polluted, () => readLogger("OpenOptions.logger", { error: () => calls.push("error") }));
    const full = withFields(polluted, () => fullLogger({ warn: () => calls.push("warn") } as never));
    read!.info({}, "m");
    read!.warn({}, "m");
    read!.error({}, "m");
    full.info({}, "m");
    full.warn({}, "m");
    expect(calls).toEqual(["error", "warn"]);
  });

  it("a level required and found only on Object.prototype is missing", () => {
    expect(() => withFields({ error: { value: now } }, () => readLogger("opts.logger", {}, ["error"]))).toThrow(ValidationError);
  });
});

describe("option readers", () => {
  it("never run a getter Object.prototype holds under an option's name", () => {
    let ran = 0;
    const getter = {
      limit: {
        get() {
          ran++;
          throw new Error("polluted getter");
        },
      },
    };
    const read = withFields(getter, () => ({ ...readOptions({ cursor: "c" }, ["limit", "cursor"], "Opts") }));
    expect(read).toEqual({ cursor: "c" });
    expect(ran).toBe(0);
  });
});
