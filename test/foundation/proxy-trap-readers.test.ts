/**
 * @module Option objects that are Proxies whose `getOwnPropertyDescriptor`
 * or `getPrototypeOf` trap throws, for a field name a base prototype holds
 * (`name` always does; `priority` once `Object.prototype` is polluted with
 * it): a reader asks those traps to tell the caller's field from the base
 * prototype's, and cannot. Every reader refuses such an object with a
 * `ValidationError` naming the field, never reading the field as absent;
 * an enqueue or a submission given one changes nothing durable.
 */
import { describe, expect, it } from "vitest";
import { type EnqueueOptions, type RunOptions, SettlementEffects, StepOutcome, ValidationError } from "taquba";
import { callerField, readExactOptions, readFields, readOptions } from "../../runtime/option-values.js";
import { enc, openQueue } from "../queue/helpers.js";
import { whilePolluted } from "../support/polluted-prototype.js";
import { openEnv } from "../workflow/helpers.js";

const trapError = (what: string) => () => {
  throw new Error(`${what} trap`);
};

/**
 * A Proxy over `fields` that lists no own field (so no check of unknown
 * fields asks its descriptors) and answers each from its `get` trap, with
 * trap `trap` throwing.
 */
function hostile(fields: Record<string, unknown>, trap: "getOwnPropertyDescriptor" | "getPrototypeOf"): object {
  return new Proxy(
    {},
    {
      ownKeys: () => [],
      get: (_, k) => (typeof k === "string" ? fields[k] : undefined),
      [trap]: trapError(trap),
    },
  );
}

const TRAPS = ["getOwnPropertyDescriptor", "getPrototypeOf"] as const;

/** What `act` throws; fails the test when it returns. */
function thrown(act: () => unknown): unknown {
  try {
    act();
  } catch (err) {
    return err;
  }
  return expect.fail("expected a refusal");
}

describe("the shared readers, given a Proxy whose traps throw", () => {
  for (const trap of TRAPS) {
    it(`readFields reports ${trap} throwing for a name a base prototype holds as a problem, not an absent field`, () => {
      const problems: string[] = [];
      const out = readFields(hostile({ name: "mine" }, trap), ["name"], "Options.", problems);
      expect(problems).toEqual([`reading Options.name threw: ${trap} trap`]);
      expect(out.name).toBeUndefined();
    });

    it(`readOptions and readExactOptions refuse it (${trap}) with a ValidationError naming the field`, () => {
      for (const read of [readOptions, readExactOptions]) {
        const err = thrown(() => read(hostile({ name: "mine" }, trap), ["name"], "Options"));
        expect(err).toBeInstanceOf(ValidationError);
        expect((err as ValidationError).issues.join("\n") + (err as Error).message).toContain(`Options.name threw: ${trap} trap`);
      }
    });

    it(`callerField refuses it (${trap}) with a ValidationError naming the field`, () => {
      const err = thrown(() => callerField(hostile({ name: "mine" }, trap), "name", "Options.name"));
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toBe(`reading Options.name threw: ${trap} trap`);
    });
  }
});

describe("enqueues and submissions given such options", () => {
  it("an enqueue, a batch and an enqueue with effects refuse them and enqueue nothing", async () => {
    const { queue } = await openQueue();
    await whilePolluted({ priority: 9 }, async () => {
      for (const trap of TRAPS) {
        const opts = () => hostile({ priority: 3 }, trap) as EnqueueOptions;
        // A throwing getPrototypeOf is met first by the check of unknown fields, which lists the prototype's.
        const words = new RegExp(`EnqueueOptions${trap === "getOwnPropertyDescriptor" ? "\\.priority" : ""} threw: ${trap} trap`);
        await expect(queue.enqueue("q", enc("one"), opts())).rejects.toThrow(words);
        await expect(queue.enqueueBatch([{ queueName: "q", payload: enc("b"), opts: opts() }])).rejects.toThrow(words);
        expect(() => new SettlementEffects().enqueue("q", enc("e"), opts())).toThrow(words);
      }
    });
    expect((await queue.view().stats("q")).pending).toBe(0);
    await queue.close();
  });

  it("a run submission refuses them and makes no run", async () => {
    const env = await openEnv({ runStep: async () => StepOutcome.succeed(enc("done")) });
    try {
      await whilePolluted({ priority: 9 }, async () => {
        for (const trap of TRAPS) {
          const options = hostile({ priority: 3 }, trap) as RunOptions;
          const err = await env.runtime.submit({ runId: `r-${trap}`, input: enc("x"), options }).then(
            () => expect.fail("expected a refusal"),
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(ValidationError);
          expect((err as Error).message).toContain(`threw: ${trap} trap`);
          expect(await env.runtime.status(`r-${trap}`)).toBeNull();
        }
      });
    } finally {
      await env.stop();
    }
  });
});
