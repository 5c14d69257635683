/**
 * @module What a store reopened after crash writers were killed must hold
 * (see crash-batches.ts): no half-applied batch, every batch acknowledged
 * as durable, each counter of the last writer at least its newest durable
 * batch, and exactly one marker per loop, the one its counter names (a
 * lost tombstone would leave two).
 */
import { expect } from "vitest";
import { Engine, type ObjectStore } from "taquba";

/** The reads the checks need (an open engine). */
interface ReadableState {
  scan(opts: { prefix: string }): Iterable<[string, Uint8Array]>;
  get(key: string): Uint8Array | undefined;
}

const dec = (v: Uint8Array | undefined): string => new TextDecoder().decode(v);

/** Checks `engine` against `allDurable` (every id acknowledged so far); `tag` is the last writer's, whose counters are checked. */
export function expectCrashState(engine: ReadableState, allDurable: readonly string[], tag: string): void {
  const batches = new Map<string, number>();
  for (const [key, value] of engine.scan({ prefix: "b/" })) {
    const id = key.split("/")[1]!;
    expect(dec(value)).toBe(id);
    batches.set(id, (batches.get(id) ?? 0) + 1);
  }
  for (const [id, n] of batches) expect(n, `batch ${id} is half applied`).toBe(3);
  for (const id of allDurable) expect(batches.has(id), `durable batch ${id} is missing`).toBe(true);
  for (const id of allDurable.filter((d) => d.startsWith(`${tag}-`))) {
    const [, w, i] = id.split("-");
    expect(Number(dec(engine.get(`last/${tag}-${w}`)))).toBeGreaterThanOrEqual(Number(i));
  }
  const markers = new Map<string, number[]>();
  for (const [key] of engine.scan({ prefix: "x/" })) {
    const [, loop, n] = key.split("/");
    markers.set(loop!, [...(markers.get(loop!) ?? []), Number(n)]);
  }
  for (const [loop, ns] of markers) {
    expect(ns, `loop ${loop} has stale markers (a delete was lost)`).toHaveLength(1);
    expect(ns[0]).toBe(Number(dec(engine.get(`last/${loop}`))));
  }
  for (const id of allDurable) expect(markers.has(id.split("-").slice(0, 2).join("-")), `loop of ${id} has no marker`).toBe(true);
}

/** Opens a writer over `store`, checks it with {@link expectCrashState} and closes it, also when a check fails. */
export async function expectReopenedCrashState(store: ObjectStore, allDurable: readonly string[], tag: string): Promise<void> {
  const engine = await Engine.open(store);
  try {
    expectCrashState(engine, allDurable, tag);
  } finally {
    await engine.close();
  }
}
