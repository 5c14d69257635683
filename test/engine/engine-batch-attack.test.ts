/**
 * @module Hostile write batches handed to `Engine.commit` (a batch whose ops
 * were built by hand): whatever the ops hold, the commit rejects with a
 * `ValidationError` whose message stays short, applies nothing, and the
 * engine goes on.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, ValidationError, WriteBatch } from "taquba";

/** A WriteBatch whose ops are `ops`, as a caller building one by hand would make it. */
function batchOf(ops: unknown[]): WriteBatch {
  const b = new WriteBatch();
  (b as unknown as { ops: unknown[] }).ops = ops;
  return b;
}

const revoked = () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};

const lone = "\ud800";

describe("Engine.commit with hostile ops", () => {
  const cases: [string, () => unknown[]][] = [
    ["an op that is null", () => [null]],
    ["an op that is a number", () => [7]],
    ["an op that is a revoked Proxy", () => [revoked()]],
    ["a kind that is a bigint", () => [{ kind: 1n, key: "a" }]],
    [
      "a kind whose toJSON throws",
      () => [
        {
          kind: {
            toJSON: () => {
              throw new Error("no");
            },
          },
          key: "a",
        },
      ],
    ],
    ["a value that is a revoked Proxy", () => [{ kind: "put", key: "a", value: revoked() }]],
    [
      "ten keys of 10 MB with a lone surrogate",
      () => Array.from({ length: 10 }, () => ({ kind: "put", key: `${"k".repeat(10_000_000)}${lone}`, value: new Uint8Array(1) })),
    ],
    [
      "ten keys of 10 MB whose values are not bytes",
      () => Array.from({ length: 10 }, (_, i) => ({ kind: "put", key: `${i}${"k".repeat(10_000_000)}`, value: "v" })),
    ],
  ];
  for (const [name, ops] of cases) {
    it(`${name}: a short ValidationError, nothing applied, the engine goes on`, async () => {
      const engine = await Engine.open(new MemoryStore());
      const err = await engine.commit(batchOf([{ kind: "put", key: "first", value: new Uint8Array(1) }, ...ops()])).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message.length).toBeLessThan(10_000);
      expect(engine.get("first")).toBeUndefined();
      await engine.commit(new WriteBatch().put("after", new Uint8Array(2)));
      expect(engine.get("after")).toEqual(new Uint8Array(2));
      await engine.close();
    });
  }
});
