/**
 * @module Hostile write batches handed to `Engine.commit` (a batch whose ops
 * were built by hand): whatever the ops hold, the commit rejects with a
 * `ValidationError` whose message stays short, applies nothing, and the
 * engine goes on. And ops that answer differently each time they are read
 * (getters, a Proxy) are read once: the WAL holds what memory holds, so a
 * reopen replays exactly what the commit acknowledged.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, ValidationError, WriteBatch } from "taquba";
import type { BatchOp } from "../../runtime/engine/write-batch.js";

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

/** Answers `answers[n]` on the n-th read (from 0), the last one on every read after them. */
function shifting<T>(...answers: T[]): () => T {
  let reads = 0;
  return () => answers[Math.min(reads++, answers.length - 1)] as T;
}

describe("Engine.commit with ops that change between reads", () => {
  const bytes = (...b: number[]) => new Uint8Array(b);
  class LyingBytes extends Uint8Array {
    #reads = 0;
    override get byteLength(): number {
      return this.#reads++ === 0 ? super.byteLength : 1;
    }
  }
  const cases: [string, () => unknown[]][] = [
    [
      "an op whose key getter answers another key on each read",
      () => {
        const key = shifting("k/acked", "k/wal", "k/memory");
        return [
          {
            kind: "put",
            get key() {
              return key();
            },
            value: bytes(1),
          },
        ];
      },
    ],
    [
      "an op whose key getter answers a lone surrogate once validated",
      () => {
        const key = shifting("k/acked", `k/${lone}`);
        return [
          {
            kind: "put",
            get key() {
              return key();
            },
            value: bytes(1),
          },
        ];
      },
    ],
    [
      "an op whose kind getter turns a delete into a put",
      () => {
        const kind = shifting("delete", "delete", "put");
        return [
          { kind: "put", key: "k/acked", value: bytes(1) },
          {
            get kind() {
              return kind();
            },
            key: "k/acked",
            value: bytes(9),
          },
        ];
      },
    ],
    [
      "an op whose value getter answers other bytes on each read",
      () => {
        const value = shifting(bytes(1), bytes(2, 2), bytes(3, 3, 3));
        return [
          {
            kind: "put",
            key: "k/acked",
            get value() {
              return value();
            },
          },
        ];
      },
    ],
    [
      "a Proxy op that answers another key on each read",
      () => {
        const key = shifting("k/acked", "k/wal", "k/memory");
        return [new Proxy({ kind: "put", key: "", value: bytes(1) }, { get: (t, p) => (p === "key" ? key() : Reflect.get(t, p)) })];
      },
    ],
    [
      "a Proxy ops array whose element changes on each read",
      () => {
        const op = shifting<unknown>(
          { kind: "put", key: "k/acked", value: bytes(1) },
          { kind: "put", key: "k/wal", value: bytes(2) },
          { kind: "delete", key: "k/memory" },
        );
        return new Proxy([undefined], { get: (t, p) => (p === "0" ? op() : Reflect.get(t, p)) });
      },
    ],
    ["a Uint8Array subclass whose byteLength changes after the first read", () => [{ kind: "put", key: "k/acked", value: LyingBytes.of(1, 2, 3) }]],
    [
      "a plain Uint8Array whose own byteLength answers falsely after the first read",
      () => [{ kind: "put", key: "k/acked", value: lyingLength(bytes(1, 2, 3)) }],
    ],
    [
      "a Proxy value whose length changes after the first read",
      () => {
        const length = shifting(3, 1);
        return [
          {
            kind: "put",
            key: "k/acked",
            value: new Proxy(bytes(1, 2, 3), { get: (t, p) => (p === "length" || p === "byteLength" ? length() : Reflect.get(t, p)) }),
          },
        ];
      },
    ],
  ];
  for (const [name, ops] of cases) {
    it(`${name}: memory and a reopen hold the same state`, () => expectReopenHoldsWhatMemoryHeld(ops()));
  }
});

/**
 * Ops `WriteBatch.put` and `delete` made, and copies of them: a commit that
 * took the ops it made without reading them again must still read once any
 * copy, forgery or frozen look-alike, and check the values it was given.
 */
describe("Engine.commit with ops WriteBatch made, and copies of them", () => {
  const bytes = (...b: number[]) => new Uint8Array(b);
  /** An op `put` made (each case copies it and gives the copy a key that answers another key on each read). */
  const made = () => new WriteBatch().put("k/acked", bytes(1)).ops[0] as BatchOp;
  const lying = (op: object): object => {
    const key = shifting("k/acked", "k/wal", "k/memory");
    return Object.defineProperty(op, "key", {
      get() {
        return key();
      },
      enumerable: true,
    });
  };
  const cases: [string, () => unknown[]][] = [
    ["a spread copy of a made op whose key getter answers another key on each read", () => [lying({ ...made() })]],
    ["an op made from a made op's prototype", () => [lying(Object.assign(Object.create(Object.getPrototypeOf(made()) as object) as object, made()))]],
    [
      "a frozen op built by hand whose key getter answers another key on each read",
      () => {
        const key = shifting("k/acked", "k/wal", "k/memory");
        return [
          Object.freeze({
            kind: "put",
            get key() {
              return key();
            },
            value: bytes(1),
          }),
        ];
      },
    ],
    [
      "a made op's value given an own byteLength that answers falsely after the first read",
      () => new WriteBatch().put("k/acked", lyingLength(bytes(1, 2, 3))).ops,
    ],
    [
      "a made op whose value is a Uint8Array subclass",
      () => {
        class LyingBytes extends Uint8Array {
          #reads = 0;
          override get byteLength(): number {
            return this.#reads++ === 0 ? super.byteLength : 1;
          }
        }
        return new WriteBatch().put("k/acked", LyingBytes.of(1, 2, 3)).ops;
      },
    ],
  ];
  for (const [name, ops] of cases) {
    it(`${name}: memory and a reopen hold the same state`, () => expectReopenHoldsWhatMemoryHeld(ops()));
  }

  it("a made op with a key that is not well-formed, or a value that is not bytes, is still refused whole", async () => {
    const engine = await Engine.open(new MemoryStore());
    for (const batch of [
      new WriteBatch().put("first", bytes(1)).put(`k/${lone}`, bytes(1)),
      new WriteBatch().put("first", bytes(1)).delete(`k/${lone}`),
      new WriteBatch().put("first", bytes(1)).put("k/v", "text" as unknown as Uint8Array),
      new WriteBatch().put("first", bytes(1)).put(7 as unknown as string, bytes(1)),
    ]) {
      await expect(engine.commit(batch)).rejects.toBeInstanceOf(ValidationError);
    }
    expect(snapshot(engine)).toEqual([]);
    await engine.close();
  });

  it("a made op with a value of a detached buffer is refused whole", async () => {
    const engine = await Engine.open(new MemoryStore());
    const value = bytes(1, 2, 3);
    const batch = new WriteBatch().put("first", bytes(1)).put("k/v", value);
    structuredClone(value.buffer, { transfer: [value.buffer] });
    await expect(engine.commit(batch)).rejects.toBeInstanceOf(ValidationError);
    expect(snapshot(engine)).toEqual([]);
    await engine.close();
  });
});

/** Every key and a copy of its value's bytes, in key order. */
/** Commits `ops` and one batch after them, then checks that a reopen holds what memory held. */
async function expectReopenHoldsWhatMemoryHeld(ops: unknown[]): Promise<void> {
  const store = new MemoryStore();
  const engine = await Engine.open(store);
  await engine.commit(batchOf(ops));
  await engine.commit(new WriteBatch().put("k/later", new Uint8Array([7])));
  const acked = snapshot(engine);
  await engine.close();
  const reopened = await Engine.open(store);
  expect(snapshot(reopened)).toEqual(acked);
  await reopened.close();
}

function snapshot(engine: Engine): [string, number[]][] {
  return [...engine.scan()].map(([k, v]) => [k, [...v]]);
}

/** `value` with an own `byteLength` that gives the true length once, then 1 (a lie a prototype check cannot see). */
function lyingLength(value: Uint8Array): Uint8Array {
  let reads = 0;
  Object.defineProperty(value, "byteLength", { get: () => (reads++ === 0 ? value.length : 1) });
  return value;
}
