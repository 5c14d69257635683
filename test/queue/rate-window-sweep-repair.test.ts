/**
 * @module The maintenance sweep of the durable rate windows: a damaged
 * window of a key never claimed again is deleted (and reported) once it
 * held its key one period, not kept forever; a period raised at a restart
 * keeps the windows the new period still counts, so a second restart does
 * not let a claim through early.
 */
import { describe, expect, it } from "vitest";
import { FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER, MemoryStore, MockClock, Queue } from "taquba";
import { Engine } from "../../runtime/engine/engine.js";
import { EngineReader } from "../../runtime/engine/engine-reader.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import type { ObjectStore } from "../../runtime/store/object-store.js";

const enc = (s: string) => new TextEncoder().encode(s);
const SWEEP = 60_000;
const engineStore = (store: ObjectStore) => new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX);

async function windowKeys(store: ObjectStore): Promise<string[]> {
  const r = await EngineReader.open(engineStore(store));
  const keys = [...r.scan({ prefix: "w/" })].map(([k]) => k);
  await r.close();
  return keys.sort();
}

async function putRaw(store: ObjectStore, entries: [string, string][]): Promise<void> {
  const engine = await Engine.open(engineStore(store));
  const b = new WriteBatch();
  for (const [k, v] of entries) b.put(k, enc(v));
  await engine.commit(b);
  await engine.close();
}

describe("rate-window sweep", () => {
  it("deletes a damaged window of a key never claimed again once it held its key one period, and says so", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const period = 5 * SWEEP;
    await putRaw(store, [
      ["w/own/qghost", "{not json"],
      [`w/own/r${JSON.stringify(["report", "acme"])}`, JSON.stringify({ l: -1, p: 1000, u: 1, t: [] })],
      ["w/gone/qx", "\u0000garbage"],
    ]);
    const warnings: string[] = [];
    const logger = { error: () => undefined, warn: (_o: unknown, m: string) => warnings.push(m) };
    const queue = await Queue.open(store, "q", {
      clock,
      flushIntervalMs: 0,
      logger,
      queueConfigs: { own: { rateLimit: { limit: 1, periodMs: period, key: "{t}" } } },
    });
    queue.defineFlowRules("own", { report: { rateLimit: { limit: 1, periodMs: period } } });
    try {
      await queue.runMaintenance();
      await queue.flush();
      // First seen now: a restarted owner would hold these keys a period from here.
      expect(await windowKeys(store)).toHaveLength(3);
      clock.advance(SWEEP);
      await queue.runMaintenance();
      await queue.flush();
      // No rate limit applies to queue "gone" any more: nothing holds by its window.
      expect(await windowKeys(store)).toHaveLength(2);
      clock.advance(period - SWEEP - 1);
      await queue.runMaintenance();
      await queue.flush();
      expect(await windowKeys(store)).toHaveLength(2);
      clock.advance(SWEEP);
      await queue.runMaintenance();
      await queue.flush();
      expect(await windowKeys(store)).toEqual([]);
      expect(warnings.filter((m) => m.includes("damaged rate-limit window"))).toHaveLength(3);
      expect(warnings.some((m) => m.includes('key "ghost" of queue "own"'))).toBe(true);
      expect(warnings.some((m) => m.includes('flow rule "report"'))).toBe(true);
    } finally {
      await queue.close();
    }
  });

  it("keeps a flow rule's window while the rule is not defined yet, so a period raised at a restart still holds its key", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const headers = { [FLOW_RULE_HEADER]: "paced", [FLOW_RATE_KEY_HEADER]: "acme" };
    const open = () => Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    let queue = await open();
    queue.defineFlowRules("own", { paced: { rateLimit: { limit: 1, periodMs: SWEEP } } });
    await queue.enqueue("own", enc("a"), { headers });
    expect(await queue.claimBatch("own", 10)).toHaveLength(1);
    await queue.close();
    clock.advance(2 * SWEEP);
    // Reopened with the rule's period raised to ten minutes: the open's first sweep runs before the rule is defined.
    queue = await open();
    await queue.runMaintenance();
    await queue.flush();
    expect(await windowKeys(store)).toEqual([`w/own/r${JSON.stringify(["paced", "acme"])}`]);
    queue.defineFlowRules("own", { paced: { rateLimit: { limit: 1, periodMs: 10 * SWEEP } } });
    try {
      await queue.enqueue("own", enc("b"), { headers });
      expect(await queue.claimBatch("own", 10), "a claim 2 minutes after the last, under a limit of 1 per 10 minutes").toEqual([]);
      clock.advance(8 * SWEEP);
      expect(await queue.claimBatch("own", 10)).toHaveLength(1);
    } finally {
      await queue.close();
    }
  });

  it("deletes an expired window of a flow rule no one defines a sweep interval after first finding it", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    await putRaw(store, [[`w/own/r${JSON.stringify(["gone", "acme"])}`, JSON.stringify({ l: 1, p: 1000, u: 1_001_000, t: [1_000_000] })]]);
    clock.advance(SWEEP);
    const queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    try {
      await queue.runMaintenance();
      await queue.flush();
      expect(await windowKeys(store)).toHaveLength(1);
      clock.advance(SWEEP - 1);
      await queue.runMaintenance();
      await queue.flush();
      expect(await windowKeys(store)).toHaveLength(1);
      clock.advance(1);
      await queue.runMaintenance();
      await queue.flush();
      expect(await windowKeys(store)).toEqual([]);
    } finally {
      await queue.close();
    }
  });

  it("keeps a window the period raised at a restart still counts, so a later restart still holds its key", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const open = (periodMs: number) =>
      Queue.open(store, "q", { clock, flushIntervalMs: 0, queueConfigs: { own: { rateLimit: { limit: 1, periodMs, key: "{t}" } } } });
    let queue = await open(1000);
    await queue.enqueue("own", enc("a"), { headers: { t: "acme" } });
    expect(await queue.claimBatch("own", 10)).toHaveLength(1);
    await queue.close();
    // Restarted with a period of ten minutes: the claim at 1_000_000 holds the key until 1_600_000.
    queue = await open(10 * SWEEP);
    clock.advance(2 * SWEEP);
    await queue.runMaintenance();
    await queue.flush();
    expect(await windowKeys(store)).toEqual(["w/own/qacme"]);
    await queue.close();
    queue = await open(10 * SWEEP);
    try {
      await queue.enqueue("own", enc("b"), { headers: { t: "acme" } });
      expect(await queue.claimBatch("own", 10), "a claim 2 minutes after the last, under a limit of 1 per 10 minutes").toEqual([]);
      clock.advance(8 * SWEEP);
      expect(await queue.claimBatch("own", 10)).toHaveLength(1);
    } finally {
      await queue.close();
    }
  });
});
