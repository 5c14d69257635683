/**
 * @module `OperatorSession` reads its options once, when made: every
 * command, shard session and client it opens later uses that copy, so a
 * getter answering differently later cannot point a command elsewhere,
 * and one that throws is a `ValidationError` naming the option.
 */
import { describe, expect, it } from "vitest";
import { createShards, MemoryStore, ValidationError } from "taquba";
import { OperatorSession, type SessionOptions } from "../../operator/cli/session.js";

describe("OperatorSession options", () => {
  it("asks for each option once, however many commands and shards use it", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", 2);
    const reads = new Map<string, number>();
    const given = new Proxy(
      { storeUrl: "memory://", name: "app", stepQueue: "workflow-steps", memoPrefix: "memo", timeoutMs: 100, store },
      {
        get(target, k, receiver) {
          if (typeof k === "string") reads.set(k, (reads.get(k) ?? 0) + 1);
          return Reflect.get(target, k, receiver);
        },
      },
    );
    const session = new OperatorSession(given as SessionOptions);
    const after = new Map(reads);
    expect(session.name).toBe("app");
    expect(session.stepQueue).toBe("workflow-steps");
    session.memos();
    const shards = await session.shards();
    expect(shards?.map((s) => s.name)).toEqual(["app/shards/0", "app/shards/1"]);
    expect((await session.forRun("run-1")).stepQueue).toBe("workflow-steps");
    await expect(session.reader()).rejects.toThrow(/split into 2 shards/);
    await session.close();
    expect(Object.fromEntries(reads)).toEqual(Object.fromEntries(after));
    expect([...reads.values()].every((n) => n === 1)).toBe(true);
  });

  it("refuses options it cannot read, naming the option", () => {
    const opts = Object.defineProperty({ storeUrl: "memory://", stepQueue: "workflow-steps" }, "name", {
      enumerable: true,
      get() {
        throw new Error("no name");
      },
    });
    expect(() => new OperatorSession(opts as SessionOptions)).toThrow(ValidationError);
    expect(() => new OperatorSession(opts as SessionOptions)).toThrow("reading SessionOptions.name threw: no name");
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(() => new OperatorSession(revoked.proxy as SessionOptions)).toThrow("SessionOptions must be an object, got a revoked Proxy");
  });
});
