/**
 * @module Enqueue options and headers given as Proxies whose traps throw,
 * revoked Proxies and getters that throw, with `Object.prototype` clean and
 * polluted under the same names: each enqueue ends in a ValidationError
 * that names the field, and writes nothing; a Proxy that answers stays the
 * caller's options.
 */
import { describe, expect, it } from "vitest";
import { type EnqueueOptions, ValidationError } from "taquba";
import { drainPayloads, enc, openQueue } from "./helpers.js";

const boom = (what: string) => () => {
  throw new Error(`${what} trap`);
};

function revoked<T extends object>(target: T): T {
  const p = Proxy.revocable(target, {});
  p.revoke();
  return p.proxy;
}

/** Options no enqueue may take, and the words its refusal must hold. */
const REFUSED: [string, () => unknown, RegExp][] = [
  ["ownKeys throws", () => new Proxy({ priority: 3 }, { ownKeys: boom("ownKeys") }), /EnqueueOptions threw: ownKeys trap/],
  ["getOwnPropertyDescriptor throws", () => new Proxy({ priority: 3 }, { getOwnPropertyDescriptor: boom("gOPD") }), /EnqueueOptions threw: gOPD trap/],
  ["getPrototypeOf throws", () => new Proxy({ priority: 3 }, { getPrototypeOf: boom("gPO") }), /EnqueueOptions threw: gPO trap/],
  ["get throws", () => new Proxy({ priority: 3 }, { get: boom("get") }), /EnqueueOptions\.priority threw: get trap/],
  ["revoked", () => revoked({ priority: 3 }), /enqueue options must be an object, got a revoked Proxy/],
  ["getter throws", () => Object.defineProperty({}, "priority", { enumerable: true, get: boom("getter") }), /EnqueueOptions\.priority threw: getter trap/],
  ["headers' ownKeys throws", () => ({ headers: new Proxy({ a: "b" }, { ownKeys: boom("h ownKeys") }) }), /EnqueueOptions\.headers threw: h ownKeys trap/],
  [
    "headers' gOPD throws",
    () => ({ headers: new Proxy({ a: "b" }, { getOwnPropertyDescriptor: boom("h gOPD") }) }),
    /EnqueueOptions\.headers threw: h gOPD trap/,
  ],
  ["headers revoked", () => ({ headers: revoked({ a: "b" }) }), /EnqueueOptions\.headers must be an object of string values, got a revoked Proxy/],
  [
    "a header's getter throws",
    () => ({ headers: Object.defineProperty({}, "a", { enumerable: true, get: boom("h getter") }) }),
    /header "a" of EnqueueOptions\.headers threw: h getter trap/,
  ],
  ["a __proto__ header", () => ({ headers: JSON.parse('{"__proto__":"x"}') as Record<string, string> }), /header named "__proto__"/],
];

async function withPollution<T>(polluted: boolean, body: () => Promise<T>): Promise<T> {
  const proto = Object.prototype as Record<string, unknown>;
  if (polluted) {
    proto.priority = 9;
    proto.headers = { injected: "1" };
  }
  try {
    return await body();
  } finally {
    delete proto.priority;
    delete proto.headers;
  }
}

describe("enqueue options that are Proxies, getters or revoked", () => {
  for (const polluted of [false, true]) {
    it(`refuse each by a ValidationError naming the field, writing nothing${polluted ? " (Object.prototype polluted)" : ""}`, async () => {
      const { queue } = await openQueue();
      await withPollution(polluted, async () => {
        for (const [name, make, words] of REFUSED) {
          const single = queue.enqueue("q", enc(name), make() as EnqueueOptions);
          await expect(single, name).rejects.toBeInstanceOf(ValidationError);
          await expect(queue.enqueue("q", enc(name), make() as EnqueueOptions), name).rejects.toThrow(words);
          await expect(queue.enqueueBatch([{ queueName: "q", payload: enc(name), opts: make() as EnqueueOptions }]), name).rejects.toThrow(words);
        }
        // A Proxy whose traps answer, and one whose `has` trap throws (no reader asks it), give the caller's options.
        const answers: Record<string, unknown> = { priority: 3, headers: { h: "1" } };
        // Its fields come from its `get` trap alone, none its own: still the caller's, not the prototype's.
        await queue.enqueue("q", enc("answering"), new Proxy({}, { get: (_, k) => (typeof k === "string" ? answers[k] : undefined) }));
        await queue.enqueue("q", enc("has throws"), new Proxy({ priority: 4 }, { has: boom("has") }));
      });
      expect((await queue.view().stats("q")).pending).toBe(2);
      const claimed = await queue.claim("q");
      expect([claimed?.priority, { ...claimed?.headers }]).toEqual([3, { h: "1" }]);
      await queue.ack(claimed!);
      expect(await drainPayloads(queue, "q")).toEqual(["has throws"]);
      await queue.close();
    });
  }
});
