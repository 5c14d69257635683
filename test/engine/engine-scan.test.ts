/**
 * @module Engine scans: prefixes, bounds, limits and reverse order in UTF-8 byte
 * order.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);

describe("engine scan", () => {
  it("orders keys, honours prefix, bounds, limit and direction", async () => {
    const engine = await Engine.open(new MemoryStore());
    const b = new WriteBatch();
    for (const k of ["a/1", "a/2", "a/3", "b/1", "a/10"]) b.put(k, enc(k));
    await engine.commit(b);
    const keys = (o: Parameters<Engine["scan"]>[0]) => [...engine.scan(o)].map(([k]) => k);
    expect(keys({ prefix: "a/" })).toEqual(["a/1", "a/10", "a/2", "a/3"]);
    expect(keys({ prefix: "a/", start: "a/10", startExclusive: true })).toEqual(["a/2", "a/3"]);
    expect(keys({ prefix: "a/", end: "a/2" })).toEqual(["a/1", "a/10"]);
    expect(keys({ prefix: "a/", limit: 2 })).toEqual(["a/1", "a/10"]);
    expect(keys({ prefix: "a/", reverse: true })).toEqual(["a/3", "a/2", "a/10", "a/1"]);
    expect(keys({ prefix: "a/", reverse: true, end: "a/3", limit: 2 })).toEqual(["a/2", "a/10"]);
    expect(keys({ prefix: "a/", reverse: true, start: "a/10" })).toEqual(["a/3", "a/2", "a/10"]);
    expect(keys({ prefix: "a/", reverse: true, start: "a/10", startExclusive: true })).toEqual(["a/3", "a/2"]);
    expect(keys({})).toEqual(["a/1", "a/10", "a/2", "a/3", "b/1"]);
  });

  it("orders by UTF-8 bytes, not UTF-16 units", async () => {
    const engine = await Engine.open(new MemoryStore());
    const b = new WriteBatch().put("\u{1F600}", enc("x")).put("\uFFFD", enc("y"));
    await engine.commit(b);
    expect([...engine.scan()].map(([k]) => k)).toEqual(["\uFFFD", "\u{1F600}"]);
  });
});
