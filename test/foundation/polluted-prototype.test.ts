/**
 * @module Option readers and a polluted `Object.prototype`: a field set
 * there (by a library that merged a parsed `{"__proto__": ...}`, or by
 * hand) is set for every object of the process, so no reader takes it as
 * an option the caller left out. Fields of the caller's own object, of a
 * prototype below `Object.prototype` (`Object.create(defaults)`, a class's
 * getter) and of a prototype-less object still count. Each test pollutes
 * only while the reader runs and restores the prototype in `finally`.
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../runtime/errors.js";
import { isBaseField, optionFieldNames, optionFields, readExactOptions, readOptions } from "../../runtime/option-values.js";
import { checkedHeaders } from "../../runtime/queue/headers.js";
import { checkedEnqueueItem, ownEnqueueItem } from "../../runtime/queue/validate-enqueue.js";
import { applied, FLOW_RULE_HEADER, resolveConcurrency, resolveDebounce, resolveFlowRule, resolveRateLimit } from "../../runtime/queue/admission.js";
import { resolveQueueConfig } from "../../runtime/queue/config.js";
import { readRunOptions, readRunSpec } from "../../runtime/workflow/runs/run-option-fields.js";
import { checkScheduleSpec, readScheduleSpec } from "../../runtime/workflow/schedules/schedule-record.js";
import { checkMembers, manifestOptions, readGroupOptions } from "../../runtime/workflow/groups/run-group.js";
import type { EnqueueItem, EnqueueOptions } from "../../runtime/queue/types.js";
import { closeTimeout } from "../../runtime/workflow/worker-lifecycle.js";
import type { ScheduleSpec } from "../../runtime/workflow/schedules/schedule-types.js";

/**
 * Runs `read` with `fields` set on `Object.prototype` as a plain assignment
 * would set them (enumerable, writable), then removes them, whatever `read`
 * did. Returns what `read` returned or threw, for the caller to check with
 * the prototype clean again (vitest's own objects read fields too).
 */
function polluted<T>(fields: Record<string, unknown>, read: () => T): { value?: T; error?: unknown } {
  const proto = Object.prototype as Record<string, unknown>;
  for (const [k, v] of Object.entries(fields)) proto[k] = v;
  try {
    return { value: read() };
  } catch (error) {
    return { error };
  } finally {
    for (const k of Object.keys(fields)) delete proto[k];
  }
}

/** `polluted`, expecting `read` to answer; its value. */
function answered<T>(fields: Record<string, unknown>, read: () => T): T {
  const { value, error } = polluted(fields, read);
  if (error !== undefined) throw error;
  return value as T;
}

const bytes = new Uint8Array([1]);

describe("the shared readers", () => {
  const FIELDS = optionFields<{ limit?: number; cursor?: string }>({ limit: true, cursor: true });

  it("leave out a field only Object.prototype holds; take one the caller or a prototype below holds", () => {
    const own = answered({ limit: 9, cursor: "x" }, () => readOptions({ cursor: "c" }, FIELDS, "Opts"));
    expect({ ...own }).toEqual({ cursor: "c" });
    // The copy inherits nothing: its missing field reads as undefined even while the prototype is polluted.
    expect(answered({ limit: 9 }, () => own.limit)).toBeUndefined();
    const inherited = answered({ limit: 9 }, () => readOptions(Object.create({ limit: 3 }), FIELDS, "Opts"));
    expect({ ...inherited }).toEqual({ limit: 3 });
    class Settings {
      get limit(): number {
        return 7;
      }
    }
    expect({ ...answered({ limit: 9, cursor: "x" }, () => readExactOptions(new Settings(), FIELDS, "Opts")) }).toEqual({ limit: 7 });
    // A name Function.prototype holds (its own `name`) is no base field of an object whose chain lacks it: a Proxy's answer counts.
    const proxy = new Proxy({}, { get: (_t, k) => (k === "name" ? "app" : undefined) });
    expect({ ...readOptions(proxy, optionFields<{ name?: string }>({ name: true }), "Opts") }).toEqual({ name: "app" });
    const bare = Object.assign(Object.create(null) as object, { cursor: "n" });
    expect({ ...answered({ limit: 9 }, () => readOptions(bare, FIELDS, "Opts")) }).toEqual({ cursor: "n" });
  });

  it("take a Proxy's own answers for names the polluted prototype holds, and not what it forwards from there", () => {
    const answers: Record<string, unknown> = { limit: 3, cursor: "p" };
    const answering = new Proxy({}, { get: (_t, k) => (typeof k === "string" ? answers[k] : undefined) });
    expect({ ...answered({ limit: 9, cursor: "x" }, () => readOptions(answering, FIELDS, "Opts")) }).toEqual({ limit: 3, cursor: "p" });
    // A Proxy that forwards every read reaches the prototype's values: those stay out, as for a plain object.
    const forwarding = new Proxy({}, { get: (t, k, r) => Reflect.get(t, k, r) });
    expect({ ...answered({ limit: 9, cursor: "x" }, () => readOptions(forwarding, FIELDS, "Opts")) }).toEqual({});
    // Through the enqueue, the queue configuration and close's timeout, as a caller passes them.
    const opts = new Proxy({}, { get: (_t, k) => ({ priority: 3, leaseMs: 1234, timeoutMs: 5 })[k as "priority"] });
    const pollution = { priority: 9, leaseMs: 99_999, timeoutMs: 7 };
    expect(answered(pollution, () => checkedEnqueueItem("jobs", bytes, opts as EnqueueOptions)).opts?.priority).toBe(3);
    expect(answered(pollution, () => resolveQueueConfig(opts)).leaseMs).toBe(1234);
    expect(answered(pollution, () => closeTimeout(opts as { timeoutMs?: number }))).toBe(5);
  });

  it("ignore a getter Object.prototype holds, even one that throws, without running it", () => {
    let ran = 0;
    Object.defineProperty(Object.prototype, "limit", {
      configurable: true,
      get() {
        ran++;
        throw new Error("polluted getter");
      },
    });
    let read: unknown;
    try {
      read = { ...readOptions({ cursor: "c" }, FIELDS, "Opts") };
    } finally {
      delete (Object.prototype as Record<string, unknown>).limit;
    }
    expect(read).toEqual({ cursor: "c" });
    expect(ran).toBe(0);
  });

  it("ignore Function.prototype's fields as well, and list neither prototype's", () => {
    const fn = Object.assign(Object.create(Function.prototype) as object, { cursor: "f" });
    const names = answered({ limit: 9 }, () => optionFieldNames(fn));
    expect(names).toEqual(["cursor"]);
    (Function.prototype as unknown as Record<string, unknown>).limit = 5;
    try {
      expect(isBaseField(fn, "limit")).toBe(true);
      expect(isBaseField(Object.assign(Object.create(fn) as object, { limit: 1 }), "limit")).toBe(false);
    } finally {
      delete (Function.prototype as unknown as Record<string, unknown>).limit;
    }
  });
});

describe("every reader of a caller's options", () => {
  it("enqueue options: priority, headers, debounce and the rest left out stay out", () => {
    const pollution = { priority: 9, headers: { tenant: "evil" }, runAt: 1, dedupKey: "d", maxAttempts: 7, jobId: "j", debounce: { key: "k", periodMs: 5 } };
    const item = answered(pollution, () => checkedEnqueueItem("q", bytes, { maxAttempts: 2 }));
    expect({ ...item.opts }).toEqual({ maxAttempts: 2 });
    expect(answered(pollution, () => item.opts?.priority)).toBeUndefined();
    const none = answered(pollution, () => checkedEnqueueItem("q", bytes, undefined));
    expect({ ...none.opts }).toEqual({});
    // An item staged by hand and a batch item are read the same way.
    const byHand = answered({ ...pollution, opts: { priority: 1 } }, () => ownEnqueueItem({ queueName: "q", payload: bytes } as EnqueueItem));
    expect({ ...byHand.opts }).toEqual({});
    // The caller's own fields and a prototype below Object.prototype still count.
    const below = answered(pollution, () => checkedEnqueueItem("q", bytes, Object.create({ priority: 3 }) as EnqueueOptions));
    expect({ ...below.opts }).toEqual({ priority: 3 });
  });

  it("headers: only the caller's own names are headers", () => {
    const copy = answered({ tenant: "evil", [FLOW_RULE_HEADER]: "r" }, () => checkedHeaders({ region: "eu" }));
    expect(Object.keys(copy)).toEqual(["region"]);
  });

  it("queue configurations and flow rules: no limit comes from the prototype", () => {
    const cfg = answered({ leaseMs: 1, maxAttempts: 99, concurrency: { limit: 1 }, backoff: { baseMs: 0, maxMs: 0 }, debounce: { periodMs: 5 } }, () =>
      resolveQueueConfig({ defaultPriority: 5 }),
    );
    expect(cfg).toMatchObject({ leaseMs: 30_000, maxAttempts: 3, defaultPriority: 5, concurrency: undefined, debounce: undefined });
    expect(cfg.backoff).toEqual({ baseMs: 1000, maxMs: 300_000, factor: 2 });
    const backoff = answered({ factor: 10 }, () => resolveQueueConfig({ backoff: { baseMs: 5, maxMs: 50 } }).backoff);
    expect(backoff).toEqual({ baseMs: 5, maxMs: 50, factor: 2 });
    expect(answered({ key: "{tenant}" }, () => resolveConcurrency({ limit: 2 }).key)).toBeUndefined();
    expect(answered({ key: "{tenant}" }, () => resolveRateLimit({ limit: 2, periodMs: 10 }).key)).toBeUndefined();
    expect(answered({ key: "{tenant}" }, () => resolveDebounce({ periodMs: 10 }).key)).toBeUndefined();
    const rule = answered({ concurrency: { limit: 1 }, rateLimit: { limit: 1, periodMs: 1 } }, () => resolveFlowRule("r", {}));
    expect(rule).toMatchObject({ concurrency: undefined, rateLimit: undefined });
    const limits = { queue: "q", concurrency: undefined, rateLimit: undefined, rules: new Map([["r", resolveFlowRule("r", { concurrency: { limit: 1 } })]]) };
    // A rule header set on the prototype puts no job under the rule.
    expect(answered({ [FLOW_RULE_HEADER]: "r" }, () => applied(limits, {}))).toEqual([]);
  });

  it("run specs and run options, with their flow and debounce", () => {
    const spec = answered({ options: { priority: 9 }, runId: "evil" }, () => readRunSpec({ input: bytes })) as Record<string, unknown>;
    expect({ ...spec }).toEqual({ input: bytes });
    const opts = answered({ headers: { tenant: "evil" }, priority: 9, runAt: 1, maxAttemptsPerStep: 9 }, () =>
      readRunOptions({ flow: { rule: "r" }, debounce: { key: "k", periodMs: 5 } }),
    ) as Record<string, Record<string, unknown>>;
    expect(Object.keys(opts)).toEqual(["flow", "debounce"]);
    expect({ ...opts.flow }).toEqual({ rule: "r" });
    const flow = answered({ concurrencyKey: "evil", rateKey: "evil" }, () => readRunOptions({ flow: { rule: "r" } })) as Record<string, object>;
    expect({ ...flow.flow }).toEqual({ rule: "r" });
  });

  it("schedule specs: no default and no run option comes from the prototype", () => {
    const spec = { id: "s", cron: "* * * * *", run: { input: bytes } } as ScheduleSpec;
    const def = answered({ timezone: "Asia/Tokyo", jitterMs: 5, overlap: "allow", options: { priority: 9, headers: { tenant: "evil" } } }, () =>
      checkScheduleSpec(readScheduleSpec(spec)),
    );
    expect(def).toMatchObject({ timezone: "UTC", jitterMs: 0, overlap: "skip", headers: {} });
    expect(def.priority).toBeUndefined();
    // A `__proto__` key of a parsed spec is a field (refused), not the copy's prototype.
    const parsed = JSON.parse('{"id": "s", "cron": "* * * * *", "__proto__": {"jitterMs": 5}}') as ScheduleSpec;
    const { error } = polluted({}, () => checkScheduleSpec(readScheduleSpec({ ...parsed, run: { input: bytes } })));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues).toEqual([expect.stringMatching(/^__proto__ is not an option/)]);
  });

  it("run groups: members and options", () => {
    const members = answered({ key: "evil" }, () => checkMembers([{ key: "a", input: bytes }]));
    expect(members).toEqual([{ key: "a", input: bytes }]);
    const { error } = polluted({ input: bytes }, () => checkMembers([{ key: "a" } as never]));
    expect((error as Error).message).toMatch(/member "a" needs a Uint8Array input, got undefined/);
    const kept = answered({ headers: { tenant: "evil" }, priority: 9, flow: { rule: "r" } }, () =>
      manifestOptions(readGroupOptions({ maxAttemptsPerStep: 2 })),
    );
    expect(kept).toEqual({ headers: {}, maxAttemptsPerStep: 2 });
  });

  it("close's options: a timeout set on the prototype is none", () => {
    expect(answered({ timeoutMs: 1 }, () => closeTimeout({}))).toBe(closeTimeout(undefined));
    expect(answered({ timeoutMs: 1 }, () => closeTimeout({ timeoutMs: 5 }))).toBe(5);
  });
});
