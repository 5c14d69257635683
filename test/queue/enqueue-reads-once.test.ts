/**
 * @module `enqueue`'s options, `enqueueBatch`'s items and the flow rules a
 * queue is given, each field read once: a getter that throws, or a revoked Proxy anywhere in them, is a
 * `ValidationError` naming the field, with nothing enqueued; a getter that
 * answers a bad value on a second read is checked and used as first read.
 * (Queue settings are copied whole at open: test/queue/open-options-hostile.)
 */
import { describe, expect, it } from "vitest";
import { FLOW_RULE_HEADER, MemoryStore, Queue, type EnqueueItem, type EnqueueOptions } from "taquba";
import { refusal } from "../support/refusal.js";
import { flipping, mostReads, revoked, throwing } from "../support/hostile-options.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

async function withQueue(act: (queue: Queue) => Promise<void>): Promise<void> {
  const queue = await Queue.open(new MemoryStore(), "app", { flushIntervalMs: 0 });
  try {
    await act(queue);
  } finally {
    await queue.close();
  }
}

describe("enqueue's options and enqueueBatch's items, each field read once", () => {
  it("a getter that throws or a revoked Proxy is a ValidationError naming it, and nothing is enqueued", () =>
    withQueue(async (queue) => {
      const payload = enc("x");
      const options: [unknown, RegExp][] = [
        [throwing("priority"), /reading EnqueueOptions\.priority threw: no priority today/],
        [throwing("debounce", { headers: { a: "1" } }), /reading EnqueueOptions\.debounce threw: no debounce today/],
        [{ debounce: throwing("periodMs", { key: "k" }) }, /reading EnqueueOptions\.debounce\.periodMs threw: no periodMs today/],
        [{ debounce: revoked() }, /EnqueueOptions\.debounce must be an object \{ key, periodMs \}, got a revoked Proxy/],
        [{ headers: revoked() }, /EnqueueOptions\.headers must be an object of string values, got a revoked Proxy/],
        [{ headers: throwing("tenant") }, /reading header "tenant" of EnqueueOptions\.headers threw: no tenant today/],
        [revoked(), /enqueue options must be an object, got a revoked Proxy/],
      ];
      for (const [opts, says] of options) {
        const err = await refusal(() => queue.enqueue("q", payload, opts as EnqueueOptions));
        expect([err.message, ...err.issues].join("\n")).toMatch(says);
      }
      const items: [unknown, RegExp][] = [
        [[throwing("payload", { queueName: "q" })], /reading enqueueBatch item 0\.payload threw: no payload today/],
        [[{ queueName: "q", payload }, throwing("opts", { queueName: "q", payload })], /reading enqueueBatch item 1\.opts threw: no opts today/],
        [[{ queueName: "q", payload }, revoked()], /enqueueBatch item 1 must be an object \{ queueName, payload, opts\? \}, got a revoked Proxy/],
        [revoked(), /enqueueBatch takes an array of \{ queueName, payload, opts\? \}, got a revoked Proxy/],
        [
          new Proxy([{ queueName: "q", payload }], {
            get(target, k) {
              if (k === "0") throw new Error("no item today");
              return Reflect.get(target, k);
            },
          }),
          /reading enqueueBatch item 0 threw: no item today/,
        ],
        [
          new Proxy([], {
            get(target, k) {
              return k === "length" ? 2 ** 40 : Reflect.get(target, k);
            },
          }),
          /enqueueBatch's items claim a length of 1099511627776/,
        ],
      ];
      for (const [batch, says] of items) {
        const err = await refusal(() => queue.enqueueBatch(batch as EnqueueItem[]));
        expect([err.message, ...err.issues].join("\n")).toMatch(says);
      }
      expect(await queue.claimBatch("q", 100)).toEqual([]);
    }));

  it("an item whose getters answer another queue and payload on a second read enqueues what they answered first", () =>
    withQueue(async (queue) => {
      const { value, reads } = flipping({ queueName: ["q", "elsewhere"], payload: [enc("first"), enc("second")], opts: [{ priority: 3 }, { priority: 1.5 }] });
      await queue.enqueueBatch([value as EnqueueItem]);
      expect(mostReads(reads)).toBe(1);
      const claimed = await queue.claimBatch("q", 10);
      expect(claimed.map((j) => [dec(j.payload), j.priority])).toEqual([["first", 3]]);
      expect(await queue.claimBatch("elsewhere", 10)).toEqual([]);
    }));
});

describe("flow rules, each field read once", () => {
  it("a flow rule whose getters answer a bad limit on a second read is defined with the limit first read; one that throws is refused naming it", () =>
    withQueue(async (queue) => {
      const rule = flipping({ concurrency: [{ limit: 1 }, { limit: -1 }] });
      const limit = flipping({ limit: [1, 1e30] });
      queue.defineFlowRules("q", { a: rule.value as never, b: { concurrency: limit.value as never } });
      expect(mostReads(rule.reads)).toBe(1);
      expect(mostReads(limit.reads)).toBe(1);
      for (const r of ["a", "a", "b", "b"]) await queue.enqueue("q", enc(r), { headers: { [FLOW_RULE_HEADER]: r } });
      expect((await queue.claimBatch("q", 10)).map((j) => dec(j.payload))).toEqual(["a", "b"]);
      const err = await refusal(() => queue.defineFlowRules("q", { c: { concurrency: throwing("limit") } } as never));
      expect([err.message, ...err.issues].join("\n")).toMatch(/reading flow rule "c": concurrency\.limit threw: no limit today/);
      const gone = await refusal(() => queue.defineFlowRules("q", { c: revoked() } as never));
      expect(gone.message).toMatch(/flow rule "c" must be an object \{ concurrency\?, rateLimit\? \}, got a revoked Proxy/);
    }));
});
