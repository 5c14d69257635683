/**
 * @module Readers racing a checkpoint (issue J, item 11). A checkpoint
 * publishes its manifest and then deletes the WAL it covers; a reader that
 * read the older manifest and lists the WAL after the deletion sees a log
 * that seems to end early. It must start over from the newer manifest, at
 * open and at refresh, never return the older state. (The engine-model
 * property test replays the random run that found this, seed 507665202.)
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, WriteBatch, type ListOptions, type ListedObject, type ObjectStore } from "taquba";
import { RETRY, useBackends } from "./backends.js";

const backends = useBackends();
const enc = new TextEncoder();
const OPTS = { flushIntervalMs: 0, checkpointWalObjects: 0, retry: RETRY };

/** `store`, except that its next WAL listing (after `arm()`, or from the start) waits until `release()` is called. */
function holdNextWalListing(store: ObjectStore, armed = true): { store: ObjectStore; reached: Promise<void>; release(): void; arm(): void } {
  let release!: () => void;
  let reachedResolve!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (reachedResolve = r));
  const wrapped: ObjectStore = {
    get: (key) => store.get(key),
    put: (key, body, opts) => store.put(key, body, opts),
    delete: (key) => store.delete(key),
    async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
      if (armed && prefix.endsWith("wal/")) {
        armed = false;
        reachedResolve();
        await released;
      }
      yield* store.list(prefix, opts);
    },
  };
  return { store: wrapped, reached, release, arm: () => (armed = true) };
}

async function commitEach(engine: Engine, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i++) await engine.commit(new WriteBatch().put(`k/${String(i).padStart(4, "0")}`, enc.encode(String(i))));
}

const keys = (reader: EngineReader) => [...reader.scan()].map(([k]) => k);
const expected = (n: number) => Array.from({ length: n }, (_, i) => `k/${String(i).padStart(4, "0")}`);

describe.each(backends)("a reader racing a checkpoint on $name", (backend) => {
  it("open starts over from the newer manifest when the WAL it planned to read was checkpointed away", async () => {
    const { store } = await backend.make();
    const writer = await Engine.open(store, OPTS);
    await commitEach(writer, 0, 8);
    const held = holdNextWalListing(store);
    const opening = EngineReader.open(held.store, { retry: RETRY });
    await held.reached; // the reader has read the old manifest
    await writer.checkpoint(); // publishes a newer one and deletes the WAL
    held.release();
    const reader = await opening;
    expect(keys(reader)).toEqual(expected(8));
    await reader.close();
    await writer.close();
  });

  it("refresh does the same", async () => {
    const { store } = await backend.make();
    const writer = await Engine.open(store, OPTS);
    await commitEach(writer, 0, 3);
    const held = holdNextWalListing(store, false);
    const reader = await EngineReader.open(held.store, { retry: RETRY });
    expect(keys(reader)).toEqual(expected(3));
    held.arm();
    await commitEach(writer, 3, 5);
    const refreshing = reader.refresh();
    await held.reached;
    await writer.checkpoint();
    held.release();
    await refreshing;
    expect(keys(reader)).toEqual(expected(8));
    await reader.close();
    await writer.close();
  });
});
