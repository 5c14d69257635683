/**
 * @module Exported functions called with hostile arguments in every
 * position (NaN, Infinity, 1e30, -0, a bigint, a symbol, a revoked Proxy,
 * an object whose every read throws, a 10 MB string, keys with lone
 * surrogates) answer or refuse with a typed error, at once: never a raw
 * TypeError or RangeError from deep inside, a hang (a string spread or
 * walked as an object of ten million entries), or a NaN answer. Add a
 * function here when it is exported.
 */
import { describe, expect, it } from "vitest";
import {
  childRunId,
  decodeWebhookJob,
  defineHeaders,
  defineJob,
  defineSchedule,
  defineSignal,
  defineWorkflow,
  parseWebhookSecret,
  shardOfRun,
  shardOfSignal,
  signWebhook,
  TaqubaError,
  upsertSchedules,
  validateJobId,
  validateObjectKey,
  validateQueueName,
  verifyWebhook,
  withCounting,
  withFaults,
  withLatency,
} from "taquba";

const revoked = Proxy.revocable({}, {});
revoked.revoke();
const unreadable = new Proxy(
  {},
  {
    get() {
      throw new Error("every read throws");
    },
  },
);
const huge = "x".repeat(10 * 1024 * 1024);

/** Hostile values, each put in every argument position in turn (the others holding `fill`). */
const HOSTILE: readonly unknown[] = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  1e30,
  -0,
  5n,
  Symbol("s"),
  revoked.proxy,
  unreadable,
  huge,
  { "\uD800": "\uDC00" },
  "\uD800",
];

const FUNCTIONS: Record<string, (...args: never[]) => unknown> = {
  childRunId,
  decodeWebhookJob,
  defineHeaders,
  defineJob,
  defineSchedule,
  defineSignal,
  defineWorkflow,
  parseWebhookSecret,
  shardOfRun,
  shardOfSignal,
  signWebhook,
  upsertSchedules,
  validateJobId,
  validateObjectKey,
  validateQueueName,
  verifyWebhook,
  withCounting,
  withFaults,
  withLatency,
};

/** What calling `fn` with `args` did (a promise's settlement included): "ok", "typed", or what escaped. */
async function outcome(fn: (...args: never[]) => unknown, args: unknown[]): Promise<string> {
  try {
    const r = await Reflect.apply(fn, undefined, args);
    if (typeof r === "number" && !Number.isInteger(r)) return `answered ${r}`;
    return "ok";
  } catch (err) {
    return err instanceof TaqubaError
      ? "typed"
      : `${err instanceof Error ? err.constructor.name : typeof err}: ${String(err instanceof Error ? err.message : "").slice(0, 120)}`;
  }
}

describe("exported functions given hostile arguments", () => {
  it.each(Object.entries(FUNCTIONS))("%s refuses with a typed error or answers, at once", async (_name, fn) => {
    const escaped: string[] = [];
    const fill: unknown[] = [undefined, undefined, undefined, undefined];
    for (let pos = 0; pos < Math.max(1, fn.length); pos++) {
      for (const [i, bad] of HOSTILE.entries()) {
        const args = [...fill.slice(0, Math.max(1, fn.length))];
        args[pos] = bad;
        // CPU time, not wall time: a loaded machine stretches the wall time of a call that is quick.
        const started = process.cpuUsage();
        const what = await outcome(fn, args);
        const used = process.cpuUsage(started);
        const ms = (used.user + used.system) / 1000;
        if (what !== "ok" && what !== "typed") escaped.push(`argument ${pos} = hostile #${i}: ${what}`);
        // A 10 MB string walked as an object took minutes; anything near a second is such a walk.
        if (ms > 1000) escaped.push(`argument ${pos} = hostile #${i}: took ${Math.round(ms)} ms of CPU`);
      }
    }
    expect(escaped).toEqual([]);
  });

  it("a shard answer is a shard, never NaN", () => {
    expect(shardOfRun("run-1", 4)).toBeGreaterThanOrEqual(0);
    expect(() => shardOfRun("run-1", Number.NaN)).toThrow("a shard count must be a whole number from 1 to 256, got NaN");
    expect(() => shardOfSignal("paid:run-1", 0)).toThrow(TaqubaError);
    expect(() => shardOfRun(7 as unknown as string, 4)).toThrow("a run id to route must be a string, got 7");
    expect(shardOfSignal("paid:run-1", 4)).toBe(shardOfRun("run-1", 4));
  });
});
