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
});
