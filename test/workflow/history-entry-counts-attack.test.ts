/**
 * @module Attack on a run's step history entries whose step number, size
 * or counts are damaged: negative, fractional or past exact integers. They
 * were read as any finite number, so `inspectRun` answered a negative
 * count of attempts left out, a fractional step, or a negative count of
 * steps dropped. Each is now damage, as a NaN was: `inspectRun` is a
 * `StoreCorruptedError` naming the entry, never a wrong count.
 */
import { Packr, unpack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StoreCorruptedError, StepOutcome } from "taquba";
import { stepHistoryKey } from "../../runtime/workflow/runs/history-records.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const packr = new Packr({ useRecords: false });
const STEPS = "workflow-steps";

const DAMAGE: ReadonlyArray<readonly [string, (e: Record<string, unknown>) => void]> = [
  ["a negative step", (e) => (e.s = -3)],
  ["a fractional step", (e) => (e.s = 0.5)],
  ["a step past exact integers", (e) => (e.s = 2 ** 53 + 2)],
  ["a negative size", (e) => (e.b = -1)],
  ["a negative count of attempts left out", (e) => (e.ad = -3)],
  ["a fractional count of memo keys written", (e) => (e.mn = 1.5)],
  ["a negative count of KV effects", (e) => (e.kn = -2)],
  ["an attempt numbered -1", (e) => ((e.a as unknown[][])[0]![0] = -1)],
  ["an attempt numbered 1.5", (e) => ((e.a as unknown[][])[0]![0] = 1.5)],
];

describe("a step history entry with a damaged step, size or count", () => {
  for (const [what, damage] of DAMAGE) {
    it(`${what}: inspectRun is a StoreCorruptedError, not a wrong count`, async () => {
      const env = await openEnv(runnerOf(async () => StepOutcome.succeed(enc("done"))));
      try {
        await env.runtime.submit({ input: enc("x"), runId: "r" });
        await env.runtime.wait("r");
        expect((await env.runtime.inspectRun("r"))?.steps).toHaveLength(1);
        const key = stepHistoryKey(STEPS, "r", 0);
        const entry = unpack((await env.queue.kvGet(key))!) as Record<string, unknown>;
        damage(entry);
        await env.queue.kvPut(key, packr.pack(entry));
        await expect(env.runtime.inspectRun("r")).rejects.toThrow(StoreCorruptedError);
      } finally {
        await env.stop();
      }
    });
  }

  it("whole numbers from 0 read as stored", async () => {
    const env = await openEnv(runnerOf(async () => StepOutcome.succeed(enc("done"))));
    try {
      await env.runtime.submit({ input: enc("x"), runId: "r" });
      await env.runtime.wait("r");
      const key = stepHistoryKey(STEPS, "r", 0);
      const entry = unpack((await env.queue.kvGet(key))!) as Record<string, unknown>;
      Object.assign(entry, { ad: 7, mn: 0, kn: Number.MAX_SAFE_INTEGER });
      await env.queue.kvPut(key, packr.pack(entry));
      expect((await env.runtime.inspectRun("r"))?.steps[0]).toMatchObject({
        step: 0,
        attemptsDropped: 7,
        memoKeysWritten: 0,
        kvEffects: Number.MAX_SAFE_INTEGER,
      });
    } finally {
      await env.stop();
    }
  });
});
