/**
 * @module Absurd flow rule values through `Queue.defineFlowRules`: every one
 * is refused with a `ValidationError` that names the rule and the field,
 * and a refused rule set changes nothing.
 */
import { describe, expect, it } from "vitest";
import { FLOW_RULE_HEADER, MemoryStore, Queue, ValidationError } from "taquba";

describe("flow rule values", () => {
  it("are refused by rule and field, never with a TypeError, and leave the rules as they were", async () => {
    const queue = await Queue.open(new MemoryStore(), "q", { flushIntervalMs: 0 });
    try {
      queue.defineFlowRules("steps", { a: { concurrency: { limit: 1 } } });
      const cases: Array<[unknown, RegExp]> = [
        [{ a: { concurrency: null } }, /flow rule "a": concurrency must be an object/],
        [{ a: { rateLimit: null } }, /flow rule "a": rateLimit must be an object/],
        [{ a: { concurrency: "2" } }, /flow rule "a": concurrency must be an object/],
        [{ a: { concurrency: { limit: Number.NaN } } }, /flow rule "a": concurrency.limit must be an integer/],
        [{ a: { concurrency: { limit: 1e30 } } }, /flow rule "a": concurrency.limit must be an integer/],
        [{ a: { concurrency: { limit: -1 } } }, /flow rule "a": concurrency.limit must be an integer/],
        [{ a: { rateLimit: { limit: 1, periodMs: Number.POSITIVE_INFINITY } } }, /flow rule "a": rateLimit.periodMs must be an integer/],
        [{ a: { rateLimit: { limit: 0, periodMs: 1000 } } }, /flow rule "a": rateLimit.limit must be an integer/],
        [{ b: { concurrency: { limit: 3 } }, a: { rateLimit: { limit: 1e30, periodMs: 1000 } } }, /flow rule "a": rateLimit.limit must be an integer/],
        [
          { a: { concurency: { limit: 1 } } },
          /flow rule "a": concurency is not an option \(misspelt\?\); the options are concurrency, rateLimit; did you mean concurrency\?/,
        ],
        [{ a: { concurrency: { limit: 1, key: "{tenant}" } } }, /flow rule "a": concurrency\.key is not an option \(misspelt\?\); the options are limit$/m],
        [{ a: { rateLimit: { limit: 1, period_ms: 1000 } } }, /flow rule "a": rateLimit\.period_ms is not an option .*; did you mean periodMs\?/],
        [{ a: { ["x".repeat(1_000_000)]: 1 } }, /^[\s\S]{0,400}flow rule "a": "x{64}\.\.\." is not an option \(misspelt\?\); the options are [\s\S]{0,400}$/],
      ];
      for (const [rules, message] of cases) {
        let caught: unknown;
        try {
          queue.defineFlowRules("steps", rules as never);
        } catch (e) {
          caught = e;
        }
        expect(caught, JSON.stringify(rules)).toBeInstanceOf(ValidationError);
        expect((caught as Error).message).toMatch(message);
      }
      // The first rule still holds and "b" of the refused set was not defined.
      const enc = new TextEncoder();
      for (const rule of ["a", "a", "b", "b"]) await queue.enqueue("steps", enc.encode(rule), { headers: { [FLOW_RULE_HEADER]: rule } });
      expect((await queue.claimBatch("steps", 10)).map((j) => new TextDecoder().decode(j.payload))).toEqual(["a", "b", "b"]);
    } finally {
      await queue.close();
    }
  });
});
