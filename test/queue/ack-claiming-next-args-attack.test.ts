/**
 * @module `ackClaimingNext` handed what is not a `ClaimNext` (nothing, an
 * object without `reserve`, a `reserve` that is not a function): refused
 * with a `ValidationError` that names what it takes, before anything is
 * settled, so the job stays claimed by its holder and the enqueue in the
 * effects is not made.
 */
import { describe, expect, it } from "vitest";
import { type Queue, SettlementEffects, ValidationError } from "taquba";
import { enc, openQueue } from "./helpers.js";

const notClaimNext: [string, unknown][] = [
  ["null", null],
  ["undefined", undefined],
  ["a number", 0],
  ["an object without reserve", { index: 0 }],
  ["reserve as a string", { index: 0, reserve: "yes" }],
];

describe("ackClaimingNext with what is not a ClaimNext", () => {
  it.each(notClaimNext)("%s is refused with ValidationError; the job stays claimed and nothing is enqueued", async (_name, bad) => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    const effects = new SettlementEffects().enqueue("q", enc("next"));
    const err = await queue.ackClaimingNext(job, effects, bad as Parameters<Queue["ackClaimingNext"]>[2]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/ackClaimingNext takes a ClaimNext/);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 1, done: 0 });
    // The holder still settles it, once.
    await queue.ack(job);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 0 });
    await queue.close();
  });
});
