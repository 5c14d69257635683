/**
 * @module Option readers that ignore fields of `Object.prototype`, attacked
 * with the shapes callers hand over: class instances whose options are
 * getters on the class (or a base class) or fields of their own, frozen
 * objects, objects without a prototype, a Proxy forwarding to its target,
 * and an object over frozen defaults. Read with `Object.prototype` polluted
 * under the same names and clean, each reader takes exactly the caller's
 * values; nothing from the prototype, nothing lost.
 */
import { describe, expect, it } from "vitest";
import { type QueueConfig, resolveQueueConfig } from "../../runtime/queue/config.js";
import type { EnqueueOptions } from "../../runtime/queue/types.js";
import { checkedEnqueueItem } from "../../runtime/queue/validate-enqueue.js";
import { closeTimeout } from "../../runtime/workflow/worker-lifecycle.js";
import { readRunOptions } from "../../runtime/workflow/runs/run-option-fields.js";

const bytes = new Uint8Array([1]);
const POLLUTION = { priority: 9, maxAttempts: 9, headers: { evil: "1" }, leaseMs: 9, timeoutMs: 9 };

/** `read` with `POLLUTION` on `Object.prototype` (or not), which is clean again afterwards whatever `read` did. */
function readUnder<T>(polluted: boolean, read: () => T): T {
  const proto = Object.prototype as Record<string, unknown>;
  if (polluted) Object.assign(proto, POLLUTION);
  try {
    return read();
  } finally {
    if (polluted) for (const k of Object.keys(POLLUTION)) delete proto[k];
  }
}

/** The shapes, each holding `fields` as a caller would. */
function shapes(fields: Record<string, unknown>): [string, object][] {
  const descriptors: PropertyDescriptorMap = {};
  for (const [k, v] of Object.entries(fields)) descriptors[k] = { get: () => v, enumerable: false, configurable: true };
  class Getters {}
  Object.defineProperties(Getters.prototype, descriptors);
  class Derived extends Getters {}
  class Own {
    constructor() {
      Object.assign(this, fields);
    }
  }
  return [
    ["a class instance with getters", new Getters()],
    ["an instance of a class derived from one with getters", new Derived()],
    ["a class instance with fields of its own", new Own()],
    ["a frozen object", Object.freeze({ ...fields })],
    ["an object without a prototype", Object.assign(Object.create(null) as object, fields)],
    ["a Proxy forwarding to an object holding them", new Proxy({ ...fields }, {})],
    ["an object over frozen defaults", Object.create(Object.freeze({ ...fields })) as object],
  ];
}

describe("option readers and the shapes of a caller's options", () => {
  for (const polluted of [false, true]) {
    const under = polluted ? "with Object.prototype polluted" : "with Object.prototype clean";

    it(`enqueue takes the priority, attempts and headers each shape holds, ${under}`, () => {
      for (const [shape, opts] of shapes({ priority: 3, maxAttempts: 2, headers: { region: "eu" } })) {
        const item = readUnder(polluted, () => checkedEnqueueItem("q", bytes, opts as EnqueueOptions));
        expect([item.opts?.priority, item.opts?.maxAttempts, { ...item.opts?.headers }], shape).toEqual([3, 2, { region: "eu" }]);
      }
      for (const [shape, opts] of shapes({ maxAttempts: 2 })) {
        const item = readUnder(polluted, () => checkedEnqueueItem("q", bytes, opts as EnqueueOptions));
        expect([item.opts?.priority, item.opts?.headers], shape).toEqual([undefined, undefined]);
      }
    });

    it(`a run's options take the priority each shape holds, ${under}`, () => {
      for (const [shape, opts] of shapes({ priority: 4 })) {
        const read = readUnder(polluted, () => readRunOptions(opts)) as Record<string, unknown>;
        expect([read.priority, read.headers], shape).toEqual([4, undefined]);
      }
    });

    it(`a queue's configuration takes the lease each shape holds, and the defaults for the rest, ${under}`, () => {
      for (const [shape, opts] of shapes({ leaseMs: 1_234 })) {
        const cfg = readUnder(polluted, () => resolveQueueConfig(opts as QueueConfig));
        expect([cfg.leaseMs, cfg.maxAttempts], shape).toEqual([1_234, 3]);
      }
    });

    it(`close takes the timeout each shape holds, ${under}`, () => {
      for (const [shape, opts] of shapes({ timeoutMs: 5 }))
        expect(
          readUnder(polluted, () => closeTimeout(opts as { timeoutMs?: number })),
          shape,
        ).toBe(5);
      for (const [shape, opts] of shapes({}))
        expect(
          readUnder(polluted, () => closeTimeout(opts as { timeoutMs?: number })),
          shape,
        ).toBe(closeTimeout(undefined));
    });
  }
});
