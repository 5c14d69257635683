/**
 * @module Rate limits seen from another process: the claim commit carries
 * each rate-limited key's window, so a `QueueReader` over the same store
 * names the rate limit and its end, for a flow rule's limit and for the
 * queue's own; a restarted owner keeps counting the claims its previous
 * run made; a queue without a rate limit writes no window; the
 * maintenance sweep deletes windows whose period passed.
 */
import { describe, expect, it } from "vitest";
import { FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER, MemoryStore, MockClock, Queue, QueueReader } from "taquba";
import { Engine } from "../../runtime/engine/engine.js";
import { EngineReader } from "../../runtime/engine/engine-reader.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import type { ObjectStore } from "../../runtime/store/object-store.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** The engine keys of the queue store "q" under `prefix`, as committed (another process's view). */
async function engineKeys(store: ObjectStore, prefix: string): Promise<string[]> {
  const r = await EngineReader.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
  const keys = [...r.scan({ prefix })].map(([k]) => k);
  await r.close();
  return keys;
}

describe("rate limits from another process", () => {
  it("a reader names the queue's and a flow rule's rate limit with its end, and nothing once the window frees", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const queue = await Queue.open(store, "q", {
      clock,
      flushIntervalMs: 0,
      queueConfigs: { own: { rateLimit: { limit: 2, periodMs: 1000, key: "{tenant}" } } },
    });
    queue.defineFlowRules("steps", { report: { rateLimit: { limit: 1, periodMs: 300 } } });
    const own = [];
    for (let i = 0; i < 3; i++) own.push(await queue.enqueue("own", enc(`o${i}`), { headers: { tenant: "acme" } }));
    const other = await queue.enqueue("own", enc("g"), { headers: { tenant: "globex" } });
    const ruled = { headers: { [FLOW_RULE_HEADER]: "report", [FLOW_RATE_KEY_HEADER]: "acme" } };
    const s1 = await queue.enqueue("steps", enc("s1"), ruled);
    const s2 = await queue.enqueue("steps", enc("s2"), ruled);
    expect((await queue.claimBatch("own", 10)).length).toBe(3);
    clock.advance(100);
    expect((await queue.claimBatch("steps", 10)).map((j) => j.id)).toEqual([s1.jobId]);
    await queue.flush();

    const reader = await QueueReader.open(store, "q", { clock });
    expect((await reader.job(own[2]!.jobId))?.waiting).toEqual({ reason: "rate_limit", key: "acme", limit: 2, periodMs: 1000, until: 1_001_000 });
    expect((await reader.job(other.jobId))?.state).toBe("claimed");
    expect((await reader.job(s2.jobId))?.waiting).toEqual({ reason: "rate_limit", key: "acme", limit: 1, periodMs: 300, until: 1_000_400, rule: "report" });
    // The reader says what the owner says.
    expect((await reader.job(own[2]!.jobId))?.waiting).toEqual((await queue.view().job(own[2]!.jobId))?.waiting);
    expect((await reader.job(s2.jobId))?.waiting).toEqual((await queue.view().job(s2.jobId))?.waiting);
    clock.advance(300);
    expect((await reader.job(s2.jobId))?.waiting).toBeUndefined();
    expect((await reader.job(own[2]!.jobId))?.waiting?.reason).toBe("rate_limit");
    clock.advance(600);
    expect((await reader.job(own[2]!.jobId))?.waiting).toBeUndefined();
    await reader.close();
    await queue.close();
  });

  it("a queue without a rate limit writes no window and no limit record", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0, queueConfigs: { conc: { concurrency: { limit: 2 } } } });
    for (let i = 0; i < 5; i++) await queue.enqueue("plain", enc(`p${i}`));
    for (let i = 0; i < 5; i++) await queue.enqueue("conc", enc(`c${i}`));
    for (const j of await queue.claimBatch("plain", 10)) await queue.ack(j);
    for (const j of await queue.claimBatch("conc", 10)) await queue.ack(j);
    await queue.flush();
    expect(await engineKeys(store, "w/")).toEqual([]);
    expect(await engineKeys(store, "l/")).toEqual([]);
    await queue.close();
  });

  it("a restarted owner keeps counting its previous run's claims, and the sweep deletes windows whose period passed", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const opts = { clock, flushIntervalMs: 0, queueConfigs: { own: { rateLimit: { limit: 2, periodMs: 1000, key: "{tenant}" } } } };
    let queue = await Queue.open(store, "q", opts);
    for (let i = 0; i < 5; i++) await queue.enqueue("own", enc(`o${i}`), { headers: { tenant: `t${i % 2}` } });
    for (const j of await queue.claimBatch("own", 1)) await queue.ack(j);
    clock.advance(400);
    const second = await queue.claimBatch("own", 10);
    expect(second.length).toBe(3);
    for (const j of second) await queue.ack(j);
    await queue.flush();
    expect((await engineKeys(store, "w/")).sort()).toEqual(["w/own/qt0", "w/own/qt1"]);
    // A crash: the next owner opens without the first's memory.
    await queue.close();
    clock.advance(100);
    queue = await Queue.open(store, "q", opts);
    // t0 was claimed at 1_000_000 and 1_000_400: full until 1_001_000 although this process never claimed it.
    const held = [{ reason: "rate_limit", key: "t0", limit: 2, periodMs: 1000, until: 1_001_000 }];
    expect((await queue.view().listJobs("own", "pending")).items.map((j) => j.waiting)).toEqual(held);
    expect(await queue.claimBatch("own", 10)).toEqual([]);
    expect((await queue.view().listJobs("own", "pending")).items.map((j) => j.waiting)).toEqual(held);
    clock.advance(400);
    expect(await queue.claimBatch("own", 10)).toEqual([]);
    clock.advance(100);
    expect((await queue.claimBatch("own", 10)).length).toBe(1);
    // The sweep runs at most once a minute; by then both windows' periods have passed.
    clock.advance(RATE_SWEEP);
    await queue.runMaintenance();
    await queue.flush();
    expect(await engineKeys(store, "w/")).toEqual([]);
    await queue.close();
  });
});

const RATE_SWEEP = 60_000;

describe("damaged rate windows", () => {
  it("a reader names no reason, the owner holds the key one full period (it cannot tell how many claims were counted), and the rewritten window is swept once its period passed", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const opts = { clock, flushIntervalMs: 0, queueConfigs: { own: { rateLimit: { limit: 1, periodMs: 1000 } } } };
    let queue = await Queue.open(store, "q", opts);
    await queue.enqueue("own", enc("a"));
    const b = await queue.enqueue("own", enc("b"));
    for (const j of await queue.claimBatch("own", 10)) await queue.ack(j);
    await queue.close();
    for (const garbage of ["{not json", JSON.stringify({ l: 1, p: 1000, u: 1e30, t: [] }), JSON.stringify({ l: -1, p: 1000, u: 2_000_000, t: ["x"] })]) {
      const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
      await engine.commit(new WriteBatch().put("w/own/q", enc(garbage)));
      await engine.close();
      const reader = await QueueReader.open(store, "q", { clock });
      expect((await reader.job(b.jobId))?.waiting, garbage).toBeUndefined();
      await reader.close();
    }
    queue = await Queue.open(store, "q", opts);
    expect(await queue.claimBatch("own", 10)).toEqual([]);
    clock.advance(999);
    expect(await queue.claimBatch("own", 10)).toEqual([]);
    clock.advance(1);
    expect((await queue.claimBatch("own", 10)).map((j) => j.id)).toEqual([b.jobId]);
    clock.advance(RATE_SWEEP);
    await queue.runMaintenance();
    await queue.flush();
    expect(await engineKeys(store, "w/")).toEqual([]);
    await queue.close();
  });
});
