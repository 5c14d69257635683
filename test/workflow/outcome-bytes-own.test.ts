/**
 * @module Bytes the workflow runtime hands to user code are the user's own:
 * a run result read back (`outcome`, `wait`, a `TaqubaClient`'s `outcome`)
 * and changed by the reader changes no later read nor what a checkpoint
 * stores (a small result is decoded from the terminal record the engine
 * holds), and a signal payload changed after `signal` buffered it reaches
 * the step as it was sent.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, TaqubaClient, type OpenOptions } from "taquba";
import { advanceUntil, enc, openEnv, runnerOf } from "./helpers.js";

const bytes = (n: number, v: number) => new Uint8Array(n).fill(v);
/** Checkpoint after every WAL object, so a later commit stores the state as it is in memory then. */
const checkpointing: OpenOptions = { engineOptions: { checkpointWalObjects: 1 } };

describe.each([
  ["with record paging", checkpointing],
  ["without record paging", { ...checkpointing, recordCacheBytes: null }],
] as const)("bytes handed to user code (%s)", (_label, queueOptions) => {
  it("a small run result read back and changed by the reader changes no later read, in this process, another, or after a checkpoint", async () => {
    const env = await openEnv(
      runnerOf(async () => StepOutcome.succeed(bytes(100, 7))),
      { queueOptions },
    );
    await env.runtime.submit({ runId: "r1", input: enc("in") });
    expect((await env.runtime.wait("r1")).outcome?.result).toEqual(bytes(100, 7));
    (await env.runtime.outcome("r1"))!.result!.fill(0xee);
    (await env.runtime.wait("r1")).outcome!.result!.fill(0xee);
    expect((await env.runtime.outcome("r1"))?.result).toEqual(bytes(100, 7));

    const client = await TaqubaClient.open(env.store, { name: "wf", queueName: "workflow-steps" });
    (await client.outcome("r1"))!.result!.fill(0xee);
    expect((await client.outcome("r1"))?.result).toEqual(bytes(100, 7));
    await client.close();

    await env.queue.kvPut("later", bytes(1, 0)); // a checkpoint of the state as it is now
    await env.stop();
    const again = await openEnv(
      runnerOf(async () => StepOutcome.succeed(bytes(1, 0))),
      { store: env.store, queueOptions, start: false },
    );
    expect((await again.runtime.outcome("r1"))?.result).toEqual(bytes(100, 7));
    await again.stop();
  });

  it("an effect staged from a Buffer (whose slice is a view) and changed after staging commits as it was staged", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        const value = Buffer.alloc(300, 4);
        s.effects.put("app/buf", value);
        value.fill(0xee);
        return StepOutcome.succeed(bytes(1, 0));
      }),
      { queueOptions },
    );
    await env.runtime.submit({ runId: "r3", input: enc("in") });
    await env.runtime.wait("r3");
    expect(new Uint8Array((await env.queue.kvGet("app/buf"))!)).toEqual(bytes(300, 4));
    await env.stop();
  });

  it("a signal payload changed after signal() buffered it reaches the step as it was sent", async () => {
    const seen: Uint8Array[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        if (s.stepNumber === 0) return StepOutcome.continueAfter(s.payload, 60_000);
        if (s.stepNumber === 1) return StepOutcome.continueOnSignal(s.payload, "sig", 3_600_000);
        seen.push(s.signal!.slice());
        return StepOutcome.succeed(s.signal!);
      }),
      { queueOptions },
    );
    await env.runtime.submit({ runId: "r2", input: enc("in") });
    const payload = bytes(500, 3);
    expect(await env.runtime.signal("sig", payload)).toBe("buffered");
    payload.fill(0xee);
    await advanceUntil(env.clock, env.clock.now() + 120_000, async () => seen.length > 0, "the signalled step");
    expect(seen).toEqual([bytes(500, 3)]);
    await env.stop();
  });
});
