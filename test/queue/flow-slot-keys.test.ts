/**
 * @module Limit keys with odd characters: a key is a header value, any
 * text. Two different limits (the queue's own, two flow rules) or two
 * different keys never share a count, whatever characters the keys hold.
 */
import { describe, expect, it } from "vitest";
import { FLOW_CONCURRENCY_KEY_HEADER, FLOW_RULE_HEADER, MemoryStore, MockClock, Queue } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

describe("limit keys with separator characters", () => {
  it("do not make the queue's limit and a rule's, or two rules, share a count", async () => {
    const queue = await Queue.open(new MemoryStore(), "q", {
      clock: new MockClock(1_000_000),
      flushIntervalMs: 0,
      queueConfigs: { steps: { concurrency: { limit: 1, key: "{tenant}" } } },
    });
    try {
      queue.defineFlowRules("steps", { r: { concurrency: { limit: 1 } }, "r\u0001x": { concurrency: { limit: 1 } } });
      // A tenant whose name reads like rule r's key, and a rule key that reads like another rule's name.
      await queue.enqueue("steps", enc("tenant"), { headers: { tenant: "r\u0001" } });
      await queue.enqueue("steps", enc("rule-r"), { headers: { [FLOW_RULE_HEADER]: "r", [FLOW_CONCURRENCY_KEY_HEADER]: "x\u0001", tenant: "t1" } });
      await queue.enqueue("steps", enc("rule-rx"), { headers: { [FLOW_RULE_HEADER]: "r\u0001x", [FLOW_CONCURRENCY_KEY_HEADER]: "", tenant: "t2" } });
      await queue.enqueue("steps", enc("rule-r-empty"), { headers: { [FLOW_RULE_HEADER]: "r", [FLOW_CONCURRENCY_KEY_HEADER]: "", tenant: "other" } });
      const claimed = (await queue.claimBatch("steps", 10)).map((j) => dec(j.payload));
      expect(claimed.sort()).toEqual(["rule-r", "rule-r-empty", "rule-rx", "tenant"]);
    } finally {
      await queue.close();
    }
  });
});
