/**
 * @module The key trace a crash test adds to a lost delete's failure: it
 * names the run and segment that wrote a key, the later run that holds its
 * tombstone, the manifests listing them, and the WAL objects after them
 * with an op on it.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { traceKeys } from "./key-trace.js";

const enc = (s: string) => new TextEncoder().encode(s);

describe("traceKeys", () => {
  it("places a key's put, its tombstone in a later run and a WAL op on it, and leaves other keys out", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 0, checkpointWalBytes: 0, maxSegmentRuns: 4 });
    // Enough other keys that the second checkpoint adds a run instead of rewriting the state.
    const first = new WriteBatch().put("x/1", enc("1"));
    for (let i = 0; i < 20; i++) first.put(`a/${i}`, enc("a"));
    await engine.commit(first);
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("a/20", enc("a")).delete("x/1"));
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("x/1", enc("again")));
    await engine.close();

    const lines = await traceKeys(store, ["x/1"]);
    const segments = lines.filter((l) => l.startsWith("seg/"));
    expect(segments).toHaveLength(2);
    expect(segments[0]).toMatch(/: put x\/1$/);
    expect(segments[1]).toMatch(/: tombstone x\/1$/);
    // The newest manifest lists both runs, each with the segment covering the key.
    const newest = lines.filter((l) => l.startsWith("manifest ")).at(-1)!;
    expect(newest.match(/covers x\/1/g)).toHaveLength(2);
    expect(lines.filter((l) => l.startsWith("WAL "))).toEqual([expect.stringMatching(/: put x\/1$/)]);
    expect(lines.join("\n")).not.toContain("a/");
  });
});
