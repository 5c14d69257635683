/**
 * @module The internal enqueue of options rebuilt from a checked job (the
 * workflow's next step, `stageRebuiltEnqueue`): its strings are taken as
 * they are, its numbers and payload are still checked, what it stages is
 * frozen and commits as given; a caller's `SettlementEffects.enqueue` keeps
 * every check.
 */
import { describe, expect, it } from "vitest";
import { SettlementEffects, ValidationError } from "taquba";
import { stageRebuiltEnqueue } from "../../runtime/queue/effects.js";
import type { RebuiltEnqueueOptions } from "../../runtime/queue/validate-enqueue.js";
import { enc, openQueue } from "./helpers.js";

const base = (): RebuiltEnqueueOptions & { headers: Record<string, string> } => ({
  jobId: "step-2-of-run-a",
  dedupKey: "run:a:2",
  priority: 3,
  maxAttempts: 4,
  headers: { tenant: "acme", "workflow.step": "2" },
});

describe("stageRebuiltEnqueue", () => {
  it("stages the options as given, frozen with their headers, and the ack commits them on the job", async () => {
    const { queue, clock } = await openQueue();
    await queue.enqueue("steps", enc("first"));
    const job = (await queue.claim("steps"))!;
    const effects = new SettlementEffects();
    const opts = { ...base(), runAt: clock.now() + 60_000 };
    stageRebuiltEnqueue(effects, "steps", enc("second"), opts);
    const item = effects.enqueues[0]!;
    expect(Object.isFrozen(item)).toBe(true);
    expect(Object.isFrozen(item.opts)).toBe(true);
    expect(Object.isFrozen(opts.headers)).toBe(true);
    expect({ ...item.opts }).toEqual(opts);
    const [outcome] = await queue.ack(job, effects);
    expect(outcome).toEqual({ jobId: "step-2-of-run-a", newlyEnqueued: true });
    expect(await queue.view().job("step-2-of-run-a")).toMatchObject({
      state: "scheduled",
      priority: 3,
      maxAttempts: 4,
      runAt: clock.now() + 60_000,
      headers: { tenant: "acme", "workflow.step": "2" },
    });
    // The dedup key is the one given: the same key enqueues nothing new.
    expect((await queue.enqueue("steps", enc("again"), { dedupKey: "run:a:2" })).newlyEnqueued).toBe(false);
    await queue.close();
  });

  it("stages no headers for an empty set, as a checked enqueue does", () => {
    const effects = new SettlementEffects();
    stageRebuiltEnqueue(effects, "steps", enc("x"), { ...base(), headers: {} });
    expect("headers" in effects.enqueues[0]!.opts!).toBe(false);
  });

  it("refuses a bad number or payload with the checked enqueue's error, staging nothing", () => {
    const cases: [string, Partial<RebuiltEnqueueOptions>, unknown][] = [
      ["priority NaN", { priority: Number.NaN }, enc("x")],
      ["priority 1e30", { priority: 1e30 }, enc("x")],
      ["maxAttempts Infinity", { maxAttempts: Number.POSITIVE_INFINITY }, enc("x")],
      ["maxAttempts 0", { maxAttempts: 0 }, enc("x")],
      ["runAt NaN", { runAt: Number.NaN }, enc("x")],
      ["runAt 1e30", { runAt: 1e30 }, enc("x")],
      ["payload a string", {}, "x"],
    ];
    for (const [what, change, payload] of cases) {
      const effects = new SettlementEffects();
      const checked = new SettlementEffects();
      const call = () => stageRebuiltEnqueue(effects, "steps", payload as Uint8Array, { ...base(), ...change });
      expect(call, what).toThrow(ValidationError);
      expect(effects.enqueues, what).toEqual([]);
      // The same message as the public enqueue's.
      let message = "";
      try {
        checked.enqueue("steps", payload as Uint8Array, { ...base(), ...change });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(call, what).toThrow(message);
    }
  });

  it("leaves the public enqueue's checks of headers, job ids and dedup keys in place", () => {
    const effects = new SettlementEffects();
    expect(() => effects.enqueue("steps", enc("x"), { headers: { a: 1 as unknown as string } })).toThrow(ValidationError);
    expect(() => effects.enqueue("steps", enc("x"), { jobId: "" })).toThrow(ValidationError);
    expect(() => effects.enqueue("steps", enc("x"), { dedupKey: "\ud800" })).toThrow(ValidationError);
    expect(effects.enqueues).toEqual([]);
  });
});
