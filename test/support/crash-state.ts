/**
 * @module What a store reopened after crash writers were killed must hold
 * (see crash-batches.ts): no half-applied batch, every batch acknowledged
 * as durable, each counter of the last writer at least its newest durable
 * batch, and exactly one marker per loop, the one its counter names (a
 * lost tombstone would leave two).
 */
import { expect } from "vitest";
import { Engine, type ObjectStore } from "taquba";
import { traceKeys } from "./key-trace.js";

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

/** The markers of loops that hold more than one, each loop's counter included: the keys to place when a delete was lost. */
function markersOfLoopsWithMore(engine: ReadableState): string[] {
  const byLoop = new Map<string, string[]>();
  for (const [key] of engine.scan({ prefix: "x/" })) {
    const loop = key.split("/")[1]!;
    byLoop.set(loop, [...(byLoop.get(loop) ?? []), key]);
  }
  return [...byLoop].filter(([, keys]) => keys.length > 1).flatMap(([loop, keys]) => [...keys, `last/${loop}`]);
}

/**
 * Opens a writer over `store`, checks it with {@link expectCrashState} and
 * closes it, also when a check fails. A loop left with more than one marker
 * (a lost delete) adds to the failure where each of its markers lives in the
 * store (see key-trace.ts), read before the close.
 */
export async function expectReopenedCrashState(store: ObjectStore, allDurable: readonly string[], tag: string): Promise<void> {
  const engine = await Engine.open(store);
  try {
    expectCrashState(engine, allDurable, tag);
  } catch (err) {
    const stale = markersOfLoopsWithMore(engine);
    if (stale.length > 0 && err instanceof Error) err.message += `\n${(await traceKeys(store, stale)).join("\n")}`;
    throw err;
  } finally {
    await engine.close();
  }
}
