/**
 * @module `commitOwned`, the engine's commit of ops its caller made and
 * holds (the queue's transaction): no op is copied, but every key and each
 * value marked as given from outside is checked as `Engine.commit` checks
 * it, so a bad one refuses the batch whole and a value that lies about its
 * length is read once: the WAL holds what memory holds. `applyOwned`, its
 * form for a caller that awaits nothing, applies the same way and returns
 * the refusal instead of a rejected promise.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, FencedError, MemoryStore, ValidationError, WriteBatch } from "taquba";
import { applyOwned, commitOwned } from "../../runtime/engine/engine.js";

const bytes = (...b: number[]) => new Uint8Array(b);
const lone = "\ud800";

function snapshot(engine: Engine): [string, number[]][] {
  return [...engine.scan()].map(([k, v]) => [k, [...v]]);
}

/** A `Uint8Array` subclass whose `byteLength` is true once, then 1. */
class LyingBytes extends Uint8Array {
  #reads = 0;
  override get byteLength(): number {
    return this.#reads++ === 0 ? super.byteLength : 1;
  }
}

/** `value` with an own `byteLength` that gives the true length once, then 1. */
function lyingLength(value: Uint8Array): Uint8Array {
  let reads = 0;
  Object.defineProperty(value, "byteLength", { get: () => (reads++ === 0 ? value.length : 1) });
  return value;
}

describe("commitOwned", () => {
  it("commits the ops as made, and a reopen holds what memory held", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store);
    const batch = new WriteBatch().put("k/a", bytes(1, 2)).put("k/b", bytes(3)).delete("k/a");
    await commitOwned(engine, batch.ops, []);
    expect(snapshot(engine)).toEqual([["k/b", [3]]]);
    await engine.close();
    const reopened = await Engine.open(store);
    expect(snapshot(reopened)).toEqual([["k/b", [3]]]);
    await reopened.close();
  });

  for (const [name, value] of [
    ["a Uint8Array subclass whose byteLength lies", () => LyingBytes.of(1, 2, 3)],
    ["an array given an own byteLength that lies", () => lyingLength(bytes(1, 2, 3))],
  ] as const) {
    it(`a given value that is ${name} is read once: memory and a reopen hold its bytes`, async () => {
      const store = new MemoryStore();
      const engine = await Engine.open(store);
      const batch = new WriteBatch().put("k/own", bytes(9)).put("k/given", value());
      await commitOwned(engine, batch.ops, [1]);
      await engine.commit(new WriteBatch().put("k/later", bytes(7)));
      const acked = snapshot(engine);
      expect(acked).toEqual([
        ["k/given", [1, 2, 3]],
        ["k/later", [7]],
        ["k/own", [9]],
      ]);
      await engine.close();
      const reopened = await Engine.open(store);
      expect(snapshot(reopened)).toEqual(acked);
      await reopened.close();
    });
  }

  it("a given value of a detached buffer, or one that is not bytes, refuses the batch whole", async () => {
    const engine = await Engine.open(new MemoryStore());
    const detached = bytes(1, 2, 3);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    for (const value of [detached, "text" as unknown as Uint8Array]) {
      const batch = new WriteBatch().put("first", bytes(1)).put("k/v", value);
      await expect(commitOwned(engine, batch.ops, [1])).rejects.toBeInstanceOf(ValidationError);
    }
    expect(snapshot(engine)).toEqual([]);
    await engine.commit(new WriteBatch().put("after", bytes(2)));
    expect(snapshot(engine)).toEqual([["after", [2]]]);
    await engine.close();
  });

  it("a key that is not well-formed refuses the batch whole, given or not", async () => {
    const engine = await Engine.open(new MemoryStore());
    for (const [batch, given] of [
      [new WriteBatch().put("first", bytes(1)).put(`k/${lone}`, bytes(1)), []],
      [new WriteBatch().put("first", bytes(1)).delete(`k/${lone}`), []],
      [new WriteBatch().put("first", bytes(1)).put(`k/${lone}`, bytes(1)), [1]],
    ] as const) {
      const err = await commitOwned(engine, batch.ops, given).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).message).toContain("nothing was applied");
    }
    expect(snapshot(engine)).toEqual([]);
    await engine.close();
  });

  it("refuses after close, as commit does", async () => {
    const engine = await Engine.open(new MemoryStore());
    await engine.close();
    await expect(commitOwned(engine, new WriteBatch().put("k", bytes(1)).ops, [])).rejects.toThrow(/closed/);
  });
});

describe("applyOwned", () => {
  it("applies in the caller's turn, returns undefined, and the next flush makes it durable", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store);
    const batch = new WriteBatch().put("k/a", bytes(1, 2)).put("k/b", bytes(3)).delete("k/a");
    expect(applyOwned(engine, batch.ops, [])).toBeUndefined();
    expect(snapshot(engine)).toEqual([["k/b", [3]]]);
    await engine.flush();
    const reopened = await Engine.open(store);
    expect(snapshot(reopened)).toEqual([["k/b", [3]]]);
    await reopened.close();
  });

  it("returns a bad key's ValidationError and applies nothing of the batch", async () => {
    const engine = await Engine.open(new MemoryStore());
    const refused = applyOwned(engine, new WriteBatch().put("first", bytes(1)).put(`k/${lone}`, bytes(1)).ops, []);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).message).toContain("nothing was applied");
    expect(snapshot(engine)).toEqual([]);
    expect(applyOwned(engine, new WriteBatch().put("after", bytes(2)).ops, [])).toBeUndefined();
    expect(snapshot(engine)).toEqual([["after", [2]]]);
    await engine.close();
  });

  it("returns the ClosedError after close and the fence after a second writer opened, applying nothing", async () => {
    const closed = await Engine.open(new MemoryStore());
    await closed.close();
    expect(applyOwned(closed, new WriteBatch().put("k", bytes(1)).ops, [])).toBeInstanceOf(ClosedError);
    expect(snapshot(closed)).toEqual([]);

    const store = new MemoryStore();
    const first = await Engine.open(store);
    const second = await Engine.open(store);
    await expect(first.commit(new WriteBatch().put("stale", bytes(1)))).rejects.toBeInstanceOf(FencedError);
    expect(applyOwned(first, new WriteBatch().put("k", bytes(1)).ops, [])).toBeInstanceOf(FencedError);
    expect(snapshot(first)).not.toContainEqual(["k", [1]]);
    await first.close();
    await second.close();
  });
  it("a batch whose reading throws undefined is refused, never taken as applied", async () => {
    const engine = await Engine.open(new MemoryStore());
    const ops = new WriteBatch().put("first", bytes(1)).ops;
    ops.push({
      kind: "delete",
      get key(): string {
        throw undefined;
      },
    });
    const refused = applyOwned(engine, ops, []);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).message).toContain("nothing of it was applied");
    expect(snapshot(engine)).toEqual([]);
    await engine.close();
  });
});
