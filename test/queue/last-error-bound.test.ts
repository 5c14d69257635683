/**
 * @module A job's `lastError`, its dead-letter log record and dead-letter
 * events keep the first 16,384 characters of an error text and a marker
 * giving the original length: a worker that fails with a huge text (a
 * response body, a dump) cannot grow the job record without bound.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "taquba";
import { enc, openQueue } from "./helpers.js";

const KEPT = 16_384;

function huge(n: number): string {
  let s = "";
  while (s.length < n) s += `line ${s.length} of a very long upstream error body\n`;
  return s.slice(0, n);
}

describe("the error text kept with a job", () => {
  it("keeps the first 16,384 characters of a retried job's error, with the original length", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    await queue.enqueue("q", enc("a"), { maxAttempts: 3 });
    const text = huge(400_000);
    await queue.nack((await queue.claim("q"))!, text);
    const again = (await queue.claim("q"))!;
    expect(again.lastError!.length).toBeLessThan(KEPT + 100);
    expect(again.lastError!.startsWith(text.slice(0, KEPT))).toBe(true);
    expect(again.lastError).toContain("of 400000 characters");
    expect((await queue.view().job(again.id))!.lastError).toBe(again.lastError);
    await queue.close();
  });

  it("bounds a dead-lettered job's lastError and its log record, also after a restart", async () => {
    const store = new MemoryStore();
    const logged: Record<string, unknown>[] = [];
    const logger = { error: (o: Record<string, unknown>) => void logged.push(o), warn: () => undefined };
    const { queue, clock } = await openQueue({ store, logger });
    const { jobId } = await queue.enqueue("q", enc("a"), { maxAttempts: 1 });
    expect((await queue.nack((await queue.claim("q"))!, huge(1_000_000))).kind).toBe("dead");
    const info = (await queue.view().job(jobId))!;
    expect(info.state).toBe("dead");
    expect(info.lastError!.length).toBeLessThan(KEPT + 100);
    expect(info.lastError).toContain("of 1000000 characters");
    const record = logged.find((o) => o.jobId === jobId)!;
    expect(record.lastError).toBe(info.lastError);
    await queue.close();
    const { queue: reopened } = await openQueue({ store, clock });
    expect((await reopened.view().job(jobId))!.lastError).toBe(info.lastError);
    await reopened.close();
  });

  it("bounds a deadLetter call's text and keeps a text of exactly the bound whole", async () => {
    const { queue } = await openQueue();
    const a = await queue.enqueue("q", enc("a"));
    const b = await queue.enqueue("q", enc("b"));
    await queue.deadLetter((await queue.claim("q"))!, huge(KEPT + 1));
    const exact = huge(KEPT);
    await queue.deadLetter((await queue.claim("q"))!, exact);
    expect((await queue.view().job(a.jobId))!.lastError).toContain(`of ${KEPT + 1} characters`);
    expect((await queue.view().job(b.jobId))!.lastError).toBe(exact);
    await queue.close();
  });

  it("never cuts between the two halves of a surrogate pair", async () => {
    const { queue } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"));
    const text = `${"x".repeat(KEPT - 1)}😀${"y".repeat(10)}`;
    await queue.deadLetter((await queue.claim("q"))!, text);
    const kept = (await queue.view().job(jobId))!.lastError!;
    expect(kept.startsWith(`${"x".repeat(KEPT - 1)}…`)).toBe(true);
    expect(kept).toContain(`first ${KEPT - 1} of ${text.length} characters`);
    // No lone high surrogate before the marker.
    expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(kept)).toBe(false);
    await queue.close();
  });
});
