/**
 * @module Queue listeners that fail (and an onClosed one at the end): dead-letter listeners: one that throws, or is async and
 * rejects, is told of a job the reaper dead-lettered. Its failure must not
 * reach the process as an unhandled rejection (which ends it by default),
 * nor keep the listeners after it, or the jobs dead-lettered with it, from
 * being told; it is logged.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { DeadLetteredEvent } from "taquba";
import { enc, openQueue, settle } from "./helpers.js";

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
  unhandled.length = 0;
});

describe("onDeadLettered listeners that fail", () => {
  for (const [name, failing] of [
    [
      "throws",
      () => {
        throw new Error("listener threw");
      },
    ],
    [
      "is async and rejects",
      async () => {
        throw new Error("listener rejected");
      },
    ],
  ] as const) {
    it(`a listener that ${name}: every job is still announced to the listeners after it, and nothing is left unhandled`, async () => {
      process.on("unhandledRejection", onUnhandled);
      const errors: string[] = [];
      const logger = { debug: () => {}, info: () => {}, warn: () => {}, error: (_o: unknown, msg: string) => errors.push(msg) };
      const { queue, clock } = await openQueue({ queueConfigs: { q: { maxAttempts: 1 } }, onDeadLettered: failing, logger });
      const seen: DeadLetteredEvent[] = [];
      queue.onDeadLettered((e) => seen.push(e));
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await queue.enqueue("q", enc(`j${i}`))).jobId);
      for (let i = 0; i < 3; i++) await queue.claim("q", 100);
      clock.advance(100);
      await settle();
      for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
      expect(seen.map((e) => e.jobId).sort()).toEqual([...ids].sort());
      expect(unhandled).toEqual([]);
      expect(errors.filter((m) => m.includes("onDeadLettered listener")).length).toBe(3);
      await queue.close();
    });
  }

  it("an async onClosed listener that rejects is logged, not left unhandled", async () => {
    process.on("unhandledRejection", onUnhandled);
    const errors: string[] = [];
    const logger = { debug: () => {}, info: () => {}, warn: () => {}, error: (_o: unknown, msg: string) => errors.push(msg) };
    const { queue } = await openQueue({
      logger,
      onClosed: async () => {
        throw new Error("onClosed rejected");
      },
    });
    await queue.close();
    for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
    expect(errors.some((m) => m.includes("an onClosed listener failed: onClosed rejected"))).toBe(true);
  });
});
