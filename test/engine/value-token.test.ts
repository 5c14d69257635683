/**
 * @module `Engine.valueToken`: equal tokens of a key mean equal bytes,
 * whatever was committed, replaced or checkpointed in between, and a key
 * nobody wrote keeps its token (the workflow's step path skips reading an
 * unchanged run record on it).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { tokenValueArb } from "./fixtures/token-values.js";

const KEYS = ["u/a", "u/b", "j/c", "n/queue-with-a-long-name"];

type Op = { kind: "put"; key: string; value: Uint8Array } | { kind: "delete"; key: string } | { kind: "checkpoint" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...KEYS).chain((key) => tokenValueArb(key).map((value): Op => ({ kind: "put", key, value }))) },
  { weight: 1, arbitrary: fc.constantFrom(...KEYS).map((key): Op => ({ kind: "delete", key })) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: "checkpoint" }) },
);

describe("engine value tokens", () => {
  it("has none for a key without a value", async () => {
    const engine = await Engine.open(new MemoryStore());
    expect(engine.valueToken("u/none")).toBeUndefined();
    await engine.commit(new WriteBatch().put("u/gone", new Uint8Array([1])));
    await engine.commit(new WriteBatch().delete("u/gone"));
    expect(engine.valueToken("u/gone")).toBeUndefined();
    await engine.close();
  });

  it("keeps a key's token while other keys are written, and changes it when the key's bytes change", async () => {
    const engine = await Engine.open(new MemoryStore());
    await engine.commit(new WriteBatch().put("u/run", new Uint8Array(200).fill(7)).put("u/other", new Uint8Array([1])));
    const t = engine.valueToken("u/run");
    expect(t).toBeDefined();
    for (let i = 0; i < 20; i++) await engine.commit(new WriteBatch().put("u/other", new Uint8Array([i])).put(`u/k${i}`, new Uint8Array(90)));
    expect(engine.valueToken("u/run")).toBe(t);
    const changed = new Uint8Array(200).fill(7);
    changed[199] = 8;
    await engine.commit(new WriteBatch().put("u/run", changed));
    expect(engine.valueToken("u/run")).not.toBe(t);
    await engine.close();
  });

  it("equal tokens mean equal bytes across commits, deletes and checkpoints", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), async (ops) => {
        // Checkpoints only when the ops say: values move into key runs and later writes shadow them.
        const engine = await Engine.open(new MemoryStore(), { checkpointWalObjects: 0 });
        const seen = new Map<string, { token: unknown; bytes: Uint8Array }[]>();
        try {
          for (const op of ops) {
            if (op.kind === "checkpoint") await engine.checkpoint();
            else if (op.kind === "put") await engine.commit(new WriteBatch().put(op.key, op.value.slice()));
            else await engine.commit(new WriteBatch().delete(op.key));
            for (const key of KEYS) {
              const token = engine.valueToken(key);
              const bytes = engine.get(key);
              if (token === undefined) continue;
              expect(bytes).toBeDefined();
              const earlier = seen.get(key) ?? [];
              for (const e of earlier) if (e.token === token) expect(bytes).toEqual(e.bytes);
              earlier.push({ token, bytes: bytes!.slice() });
              seen.set(key, earlier);
            }
          }
        } finally {
          await engine.close();
        }
      }),
      { numRuns: 150 },
    );
  });

  it("has none for a value paged out of memory", async () => {
    const engine = await Engine.open(new MemoryStore(), { pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 1 << 20 }, checkpointWalObjects: 0 });
    await engine.commit(new WriteBatch().put("j/1", new Uint8Array(300).fill(5)));
    expect(engine.valueToken("j/1")).toBeDefined();
    await engine.checkpoint();
    expect(engine.valueToken("j/1")).toBeUndefined();
    await engine.close();
  });
});
