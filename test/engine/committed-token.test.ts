/**
 * @module `Engine.committedToken`: the token a key's value has right after
 * a commit put it, made from the value without reading the key, is the one
 * `valueToken` reads while the key holds those bytes, and never one it
 * reads once the key holds other bytes (the workflow takes it for a step
 * pointer its ack just wrote, instead of reading the key back).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { tokenValueArb } from "./fixtures/token-values.js";
import { commitOwned } from "../../runtime/engine/engine.js";

const KEYS = ["u/a", "u/pointer-of-a-run", "j/c"];

type Op = { kind: "put"; key: string; value: Uint8Array } | { kind: "checkpoint" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...KEYS).chain((key) => tokenValueArb(key).map((value): Op => ({ kind: "put", key, value }))) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: "checkpoint" }) },
);

const configs = {
  "without paging": { checkpointWalObjects: 0 },
  "with job records paged": { checkpointWalObjects: 0, pageValues: { keyPrefixes: ["j/"], cacheBytes: 0 } },
} as const;

describe("a committed value's token", () => {
  for (const [name, opts] of Object.entries(configs)) {
    it(`${name}: is the token read while the key holds the bytes, and none read after they changed`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30 }), async (ops) => {
          const engine = await Engine.open(new MemoryStore(), opts);
          // Per key, each token made at a put, with the bytes put.
          const made = new Map<string, { token: unknown; bytes: Uint8Array }[]>();
          try {
            for (const op of ops) {
              if (op.kind === "checkpoint") {
                await engine.checkpoint();
              } else {
                // As the queue commits its own arrays: taken as they are, not copied.
                await commitOwned(engine, new WriteBatch().put(op.key, op.value).ops, []);
                const token = engine.committedToken(op.key, op.value);
                if (token !== undefined) {
                  expect(engine.valueToken(op.key)).toBe(token);
                  made.set(op.key, [...(made.get(op.key) ?? []), { token, bytes: op.value.slice() }]);
                }
              }
              for (const key of KEYS) {
                const now = engine.valueToken(key);
                if (now === undefined) continue;
                const bytes = engine.get(key)!;
                for (const m of made.get(key) ?? []) if (m.token === now) expect(bytes).toEqual(m.bytes);
              }
            }
          } finally {
            await engine.close();
          }
        }),
        { numRuns: 100 },
      );
    });
  }

  it("is made from the value without paging, and from its packed form for a key paging leaves in memory", async () => {
    const plain = await Engine.open(new MemoryStore());
    const value = new Uint8Array([9, 8, 7]);
    await commitOwned(plain, new WriteBatch().put("u/p", value).ops, []);
    expect(plain.committedToken("u/p", value)).toBe(value);
    expect(plain.valueToken("u/p")).toBe(value);
    // Other bytes than the key holds: no token the key's equals.
    expect(plain.committedToken("u/p", new Uint8Array([9, 8, 7]))).not.toBe(plain.valueToken("u/p"));
    await plain.close();

    const paged = await Engine.open(new MemoryStore(), { pageValues: { keyPrefixes: ["j/"], cacheBytes: 0 } });
    await paged.commit(new WriteBatch().put("u/p", value).put("j/r", new Uint8Array(4096).fill(1)).put("u/big", new Uint8Array(4096).fill(2)));
    expect(paged.committedToken("u/p", value)).toBe(paged.valueToken("u/p"));
    // A paged key's value and a value too large to pack are held as copies: no token without a read.
    expect(paged.committedToken("j/r", new Uint8Array(4096).fill(1))).toBeUndefined();
    expect(paged.committedToken("u/big", new Uint8Array(4096).fill(2))).toBeUndefined();
    // Other bytes than the key holds: a token the key's does not equal.
    expect(paged.committedToken("u/p", new Uint8Array([9, 8, 6]))).not.toBe(paged.valueToken("u/p"));
    await paged.close();
  });

  describe("taken from the string the last commit packed", () => {
    const paging = { pageValues: { keyPrefixes: ["j/"], cacheBytes: 0 } } as const;

    it("is that of the bytes an array holds when committed again, not of those it held at an earlier commit", async () => {
      const engine = await Engine.open(new MemoryStore(), paging);
      try {
        const value = new Uint8Array([1, 2, 3]);
        await commitOwned(engine, new WriteBatch().put("u/p", value).ops, []);
        expect(engine.committedToken("u/p", value)).toBe(engine.valueToken("u/p"));
        // The caller changes its array and commits it again: the token follows the bytes committed last.
        value[0] = 7;
        await commitOwned(engine, new WriteBatch().put("u/p", value).put("u/q", new Uint8Array([5])).ops, []);
        expect(engine.get("u/p")).toEqual(new Uint8Array([7, 2, 3]));
        expect(engine.committedToken("u/p", value)).toBe(engine.valueToken("u/p"));
        // An equal array it was not given: the same bytes, the same token.
        expect(engine.committedToken("u/p", new Uint8Array([7, 2, 3]))).toBe(engine.valueToken("u/p"));
        expect(engine.committedToken("u/p", new Uint8Array([1, 2, 3]))).not.toBe(engine.valueToken("u/p"));
      } finally {
        await engine.close();
      }
    });

    it("is each key's own form when one array is put under two keys", async () => {
      const engine = await Engine.open(new MemoryStore(), paging);
      try {
        // "ab" repeats the tail of u/xab (held as a length, not a string) but not of u/q.
        const value = new TextEncoder().encode("ab");
        await commitOwned(engine, new WriteBatch().put("u/q", value).put("u/xab", value).ops, []);
        expect(engine.committedToken("u/q", value)).toBe(engine.valueToken("u/q"));
        expect(engine.committedToken("u/xab", value)).toBe(engine.valueToken("u/xab"));
        expect(typeof engine.valueToken("u/xab")).not.toBe(typeof engine.valueToken("u/q"));
      } finally {
        await engine.close();
      }
    });

    it("is still the key's token after later commits, and after a refused one", async () => {
      const engine = await Engine.open(new MemoryStore(), paging);
      try {
        const value = new Uint8Array([4, 4, 4]);
        await commitOwned(engine, new WriteBatch().put("u/p", value).ops, []);
        await commitOwned(engine, new WriteBatch().put("u/other", new Uint8Array([1])).ops, []);
        expect(engine.committedToken("u/p", value)).toBe(engine.valueToken("u/p"));
        await commitOwned(engine, new WriteBatch().put("u/p", value).ops, []);
        // A batch the WAL refuses (a lone surrogate in a key) applies nothing: the commit before stays the last.
        await expect(commitOwned(engine, new WriteBatch().put("u/\ud800", new Uint8Array([1])).ops, [])).rejects.toThrow();
        expect(engine.committedToken("u/p", value)).toBe(engine.valueToken("u/p"));
        // Held after a checkpoint as before.
        await engine.checkpoint();
        expect(engine.committedToken("u/p", value)).toBe(engine.valueToken("u/p"));
      } finally {
        await engine.close();
      }
    });
  });
});
