/**
 * @module Queue restarts: recovery of claims at open, readers in another process,
 * and a child process killed with SIGKILL while holding claims.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, MockClock, Queue, QueueReader, SettlementEffects, type DeadLetteredEvent } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc, quiesce } from "./helpers.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/claim-and-hang.ts", import.meta.url));
const tempDir = useTempDirs("taquba-queue-crash-");

async function reopen(store: MemoryStore | LocalStore, clock: MockClock, extra = {}) {
  return Queue.open(store, "q", { clock, flushIntervalMs: 0, ...extra });
}

describe("restart", () => {
  it("recovery requeues held claims, dead-letters those out of attempts, keeps cancel requests", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const q1 = await reopen(store, clock);
    const a = await q1.enqueue("q", enc("a"));
    const b = await q1.enqueue("q", enc("b"), { maxAttempts: 1 });
    const c = await q1.enqueue("q", enc("c"));
    await q1.claimBatch("q", 3);
    expect(await q1.cancelJob(c.jobId)).toBe("requested");
    await q1.close();
    const events: DeadLetteredEvent[] = [];
    const q2 = await reopen(store, clock, { onDeadLettered: (e: DeadLetteredEvent) => events.push(e) });
    expect(new Set(q2.recovery.requeued)).toEqual(new Set([a.jobId, c.jobId]));
    expect(q2.recovery.deadLettered).toEqual([b.jobId]);
    expect(await q2.view().stats("q")).toMatchObject({ pending: 2, claimed: 0, dead: 1 });
    await quiesce(q2);
    expect(events.map((e) => [e.jobId, e.reason])).toEqual([[b.jobId, "interrupted"]]);
    const [ja, jc] = await q2.claimBatch("q", 2);
    expect([ja!.id, ja!.attempt, ja!.cancelSignal.aborted]).toEqual([a.jobId, 2, false]);
    expect([jc!.id, jc!.attempt, jc!.cancelSignal.aborted]).toEqual([c.jobId, 2, true]);
    expect((await q2.view().attemptHistory(a.jobId)).map((h) => h.outcome)).toEqual(["interrupted"]);
    await q2.close();
  });

  it("keeps scheduled jobs, attached bytes, KV and done counts across restarts", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const q1 = await reopen(store, clock);
    const s = await q1.enqueue("q", enc("s"), { runAt: clock.now() + 10_000 });
    const w = await q1.enqueue("q", enc("w"), { runAt: clock.now() + 99_999_999 });
    await q1.wakeScheduled("q", w.jobId, enc("att"));
    await q1.kvPut("k", enc("v"));
    await q1.close();
    const q2 = await reopen(store, clock);
    const woken = (await q2.claim("q"))!;
    expect(dec(woken.attached!)).toBe("att");
    await q2.nack(woken, "again");
    await q2.close();
    clock.advance(10_000);
    const q3 = await reopen(store, clock);
    await quiesce(q3);
    const ids = (await q3.claimBatch("q", 5)).map((j) => [j.id, j.attached && dec(j.attached)]);
    expect(ids).toEqual([
      [s.jobId, undefined],
      [w.jobId, "att"],
    ]);
    expect(dec((await q3.kvGet("k"))!)).toBe("v");
    await q3.close();
  });

  it("QueueReader serves the durable state and refreshes", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const q = await reopen(store, clock);
    const a = await q.enqueue("q", enc("a"), { headers: { h: "1" } });
    await q.kvPut("app/x", enc("1"));
    const reader = await QueueReader.open(store, "q");
    expect(await reader.stats("q")).toMatchObject({ pending: 1 });
    expect(await reader.job(a.jobId)).toMatchObject({ state: "pending", headers: { h: "1" } });
    expect((await reader.kvScan("app/")).entries.map((e) => e.key)).toEqual(["app/x"]);
    await q.ack((await q.claim("q"))!, new SettlementEffects().kvPut("app/y", enc("2")));
    expect(await reader.stats("q")).toMatchObject({ pending: 1 });
    expect(await reader.refresh()).toBe(true);
    expect(await reader.stats("q")).toMatchObject({ pending: 0, done: 1 });
    expect(dec((await reader.kvGet("app/y"))!)).toBe("2");
    expect(await reader.job(a.jobId)).toBeNull();
    await reader.close();
    await q.close();
  });

  // A child that loads the package through tsx takes about 3 s of CPU to start, 15-25 s of wall time on two
  // cores at load 14-20: the test's limit guards against a hang and is stretched by the load (support/load.ts).
  it("recovers the claims of a child process killed with SIGKILL; its acks and their effects are whole", { timeout: loadLimitTimeout(30_000) }, () =>
    withinLoadLimit(30_000, async () => {
      const dir = await tempDir();
      const child = startScript(FIXTURE, [dir, "6", "2", "3"], { env: { ...process.env, NODE_OPTIONS: "" } });
      await child.waitFor((lines) => lines.length >= 1);
      const { acked, claimed } = JSON.parse(child.lines[0]!) as { acked: string[]; claimed: string[] };
      await child.kill();
      expect(backgroundFailures(child)).toEqual([]);
      expect(acked).toHaveLength(2);
      expect(claimed).toHaveLength(3);

      const q = await Queue.open(new LocalStore(dir), "crash", { flushIntervalMs: 0 });
      expect(new Set(q.recovery.requeued)).toEqual(new Set(claimed));
      expect(await q.view().stats("work")).toMatchObject({ pending: 4, claimed: 0, done: 2 });
      expect(await q.view().stats("followups")).toMatchObject({ pending: 2 });
      for (const id of acked) {
        expect(await q.view().job(id)).toBeNull();
        expect(await q.kvGet(`acked/${id}`)).not.toBeNull();
      }
      const jobs = await q.claimBatch("work", 10);
      expect(jobs.filter((j) => claimed.includes(j.id)).every((j) => j.attempt === 2)).toBe(true);
      expect(jobs).toHaveLength(4);
      await q.close();
    }),
  );
});
