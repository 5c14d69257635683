/**
 * @module `Queue.declareKeyHeads`: a caller names prefixes of its own KV
 * keys, the queue declares them under its caller prefix to its engine. The
 * caller never names the queue's layout (its list is checked in its own
 * terms, and `keyHeads` shows its own prefixes); repeats, other callers
 * and the queue's `engineOptions.keyHeads` merge; past the engine's 32 a
 * declaration is refused whole; a closed queue refuses. Values under a
 * declared prefix read the same before, after, and once reopened without.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MemoryStore, ValidationError } from "taquba";
import { dec, enc, openQueue } from "./helpers.js";

describe("Queue.declareKeyHeads", () => {
  it("declares caller prefixes under the queue's own; repeats and other callers merge; values read the same, also reopened without", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store, engineOptions: { keyHeads: ["u/a/", "j/"] } });
    // The queue's own option heads under the caller keyspace show as the caller's; others do not show.
    expect(queue.keyHeads).toEqual(["a/"]);
    const keys = ["a/1", "b/1", "b/2", "b", "b0", "c/1", "workflow/runs/q/r1"];
    for (const k of keys) await queue.kvPut(k, enc(`v ${k}`));
    queue.declareKeyHeads(["b/", "a/"]);
    queue.declareKeyHeads(["workflow/runs/", "b/"]);
    expect(queue.keyHeads).toEqual(["a/", "b/", "workflow/runs/"]);
    for (const k of keys) expect(dec((await queue.kvGet(k))!), k).toBe(`v ${k}`);
    await queue.kvPut("b/3", enc("v b/3"));
    await queue.kvDelete("b/1");
    const expected = ["b/2", "b/3"];
    expect((await queue.kvScan("b/")).entries.map((e) => e.key)).toEqual(expected);
    await queue.close();
    const { queue: again } = await openQueue({ store });
    expect(again.keyHeads).toEqual([]);
    expect((await again.kvScan("b/")).entries.map((e) => e.key)).toEqual(expected);
    expect(dec((await again.kvGet("workflow/runs/q/r1"))!)).toBe("v workflow/runs/q/r1");
    await again.close();
  });

  it("checks the list in the caller's terms: its prefixes may be as long as the queue's caller prefix leaves room for", async () => {
    const { queue } = await openQueue();
    try {
      const refused = (given: unknown) => {
        try {
          queue.declareKeyHeads(given as string[]);
        } catch (err) {
          expect(err).toBeInstanceOf(ValidationError);
          return String((err as ValidationError).issues);
        }
        throw new Error("not refused");
      };
      expect(refused("workflow/")).toMatch(/declareKeyHeads' prefixes must be an array of key prefixes \(strings\), got "workflow\/"/);
      expect(refused([""])).toMatch(/\[0\] must be 1 to 254 characters long, got 0/);
      expect(refused(["x".repeat(255)])).toMatch(/\[0\] must be 1 to 254 characters long, got 255/);
      expect(refused(["caf\u00e9/"])).toMatch(/\[0\] must be ASCII/);
      expect(refused(["a/", "a/"])).toMatch(/\[1\] repeats the prefix "a\/"/);
      expect(refused(Array.from({ length: 33 }, (_, i) => `p${i}/`))).toMatch(/may hold at most 32 prefixes, got 33/);
      // No caller error names the queue's own prefix.
      expect(refused(["x".repeat(255)])).not.toMatch(/u\//);
      expect(queue.keyHeads).toEqual([]);
      queue.declareKeyHeads(["x".repeat(254)]);
      expect(queue.keyHeads).toEqual(["x".repeat(254)]);
    } finally {
      await queue.close();
    }
  });

  it("counts the queue's own engine heads toward the engine's 32: a declaration past them is refused whole", async () => {
    const own = [...Array.from({ length: 29 }, (_, i) => `c/${String(i).padStart(2, "0")}/`), "u/a/"];
    const { queue } = await openQueue({ engineOptions: { keyHeads: own } });
    try {
      // "a/" is "u/a/", declared already: one new of two.
      queue.declareKeyHeads(["a/", "b/"]);
      expect(queue.keyHeads).toEqual(["a/", "b/"]);
      expect(() => queue.declareKeyHeads(["c/", "d/"])).toThrow(/at most 32 key heads: 31 are declared/);
      expect(queue.keyHeads).toEqual(["a/", "b/"]);
      queue.declareKeyHeads(["c/"]);
      expect(queue.keyHeads).toEqual(["a/", "b/", "c/"]);
      expect(() => queue.declareKeyHeads(["d/"])).toThrow(ValidationError);
      queue.declareKeyHeads(["c/", "a/"]);
    } finally {
      await queue.close();
    }
  });

  it("refuses with ClosedError once the queue is closed", async () => {
    const { queue } = await openQueue();
    queue.declareKeyHeads(["a/"]);
    await queue.close();
    expect(() => queue.declareKeyHeads(["a/"])).toThrow(ClosedError);
    expect(() => queue.declareKeyHeads(["b/"])).toThrow(ClosedError);
  });
});
