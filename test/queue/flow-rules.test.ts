/**
 * @module Flow rules: limits a job's headers select (its rule and keys),
 * beside the queue's own; a rule's limit holds per key, other rules and
 * jobs without a rule are not held back by it, and a malformed rule is
 * refused whole.
 */
import { describe, expect, it } from "vitest";
import { FLOW_CONCURRENCY_KEY_HEADER, FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER, MemoryStore, MockClock, Queue, ValidationError } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const job = (rule: string | undefined, key: string): { headers: Record<string, string> } => ({
  headers: rule === undefined ? {} : { [FLOW_RULE_HEADER]: rule, [FLOW_CONCURRENCY_KEY_HEADER]: key, [FLOW_RATE_KEY_HEADER]: key },
});

describe("flow rules", () => {
  it("limits each rule per key, beside the queue's limit, and lets other rules and plain jobs pass", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await Queue.open(new MemoryStore(), "q", { clock, flushIntervalMs: 0, queueConfigs: { steps: { concurrency: { limit: 5 } } } });
    queue.defineFlowRules("steps", { "billing.send": { concurrency: { limit: 1 } }, "billing.report": { rateLimit: { limit: 2, periodMs: 1000 } } });
    for (let i = 0; i < 3; i++) await queue.enqueue("steps", enc(`send-acme-${i}`), job("billing.send", "acme"));
    await queue.enqueue("steps", enc("send-globex"), job("billing.send", "globex"));
    for (let i = 0; i < 3; i++) await queue.enqueue("steps", enc(`report-${i}`), job("billing.report", "acme"));
    await queue.enqueue("steps", enc("plain"), job(undefined, ""));
    const claimed = await queue.claimBatch("steps", 10);
    const names = claimed.map((j) => new TextDecoder().decode(j.payload));
    // The queue's own limit (5) caps the batch; within it, one send per tenant and two reports per window.
    expect(names).toEqual(["send-acme-0", "send-globex", "report-0", "report-1", "plain"]);
    const held = (await queue.view().listJobs("steps", "pending")).items;
    expect(held.map((j) => j.waiting)).toEqual([
      { reason: "concurrency", key: "acme", limit: 1, held: 1, rule: "billing.send" },
      { reason: "concurrency", key: "acme", limit: 1, held: 1, rule: "billing.send" },
      { reason: "rate_limit", key: "acme", limit: 2, periodMs: 1000, until: 1_001_000, rule: "billing.report" },
    ]);
    for (const j of claimed) await queue.ack(j);
    // Within the rate window, a freed slot admits the next send but not a third report.
    expect((await queue.claimBatch("steps", 10)).map((j) => new TextDecoder().decode(j.payload))).toEqual(["send-acme-1"]);
    clock.advance(1000);
    const next = await queue.claimBatch("steps", 10);
    expect(next.map((j) => new TextDecoder().decode(j.payload))).toEqual(["report-2"]);
    await queue.close();
  });

  it("refuses a malformed rule set whole", async () => {
    const queue = await Queue.open(new MemoryStore(), "q", { flushIntervalMs: 0 });
    for (const rules of [{ a: { concurrency: { limit: 0 } } }, { a: { rateLimit: { limit: 1, periodMs: 0 } } }, { "": {} }, { a: null }]) {
      expect(() => queue.defineFlowRules("steps", rules as never), JSON.stringify(rules)).toThrow(ValidationError);
    }
    await queue.close();
  });
});
