/**
 * @module A submission under a run id the runtime draws (`RunId.generate`)
 * reads nothing under that id: no earlier run and no other submission can
 * name it. Its first step carries what a submission under a caller's id
 * carries: the run's headers (also under names `Object.prototype` holds),
 * the reserved ones, its priority, attempts and start.
 */
import { describe, expect, it } from "vitest";
import { HEADER_RUN_ID, HEADER_STEP, ReservedHeaderError, StepOutcome, ValidationError } from "taquba";
import { enc, openEnv, runnerOf } from "./helpers.js";

const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

type Reads = { kvGet(key: string): Promise<Uint8Array | null>; kvGetNow?(key: string): Uint8Array | null };

/** The keys of the queue's KV reads (`kvGet`, and `kvGetNow`, the read in the caller's turn) while `f` runs. */
async function keysRead(queue: Reads, f: () => Promise<unknown>): Promise<string[]> {
  const keys: string[] = [];
  const { kvGet, kvGetNow } = queue;
  const own = queue as { -readonly [K in keyof Reads]?: Reads[K] };
  own.kvGet = (key) => {
    keys.push(key);
    return kvGet.call(queue, key);
  };
  if (kvGetNow !== undefined) {
    own.kvGetNow = (key) => {
      keys.push(key);
      return kvGetNow.call(queue, key);
    };
  }
  try {
    await f();
  } finally {
    delete own.kvGet;
    delete own.kvGetNow;
  }
  return keys;
}

describe("a submission under a drawn run id", () => {
  it("reads no record under the id; one under a caller's id reads its run record and terminal record", async () => {
    const env = await openEnv(echo, { start: false });
    let drawn = "";
    const fresh = await keysRead(env.queue, async () => {
      drawn = (await env.runtime.submit({ input: enc("a") })).runId;
    });
    expect(fresh.filter((k) => k.includes(drawn))).toEqual([]);
    const named = await keysRead(env.queue, () => env.runtime.submit({ input: enc("a"), runId: "named" }));
    // The control: the reads a fresh id skips are made under a caller's id (the spy sees them).
    expect(named.filter((k) => k.includes("named")).length).toBeGreaterThanOrEqual(2);
    expect(await env.runtime.status(drawn)).toMatchObject({ state: "pending", step: 0 });
    await env.stop();
  });

  it("many at once each make one run, and a resubmission under a drawn id is a duplicate", async () => {
    const env = await openEnv(echo, { start: false });
    const outs = await Promise.all(Array.from({ length: 50 }, (_, i) => env.runtime.submit({ input: enc(`in-${i}`) })));
    expect(new Set(outs.map((o) => o.runId)).size).toBe(50);
    expect(outs.every((o) => o.newlySubmitted)).toBe(true);
    expect((await env.queue.view().stats("workflow-steps")).pending).toBe(50);
    const again = await env.runtime.submit({ input: enc("in-7"), runId: outs[7]!.runId });
    expect(again).toEqual({ ...outs[7], newlySubmitted: false });
    await env.stop();
  });

  it("gives its first step the run's headers, the reserved ones and its options, as a caller's id does", async () => {
    const env = await openEnv(echo, { start: false });
    const headers = { tenant: "acme", constructor: "c", toString: "t", hasOwnProperty: "h" };
    const options = { headers, priority: 3, maxAttemptsPerStep: 4, runAt: env.clock.now() + 60_000 };
    const a = await env.runtime.submit({ input: enc("x"), options });
    const b = await env.runtime.submit({ input: enc("x"), runId: "b", options });
    const jobA = (await env.queue.view().job(a.jobId))!;
    const jobB = (await env.queue.view().job(b.jobId))!;
    for (const [job, runId] of [
      [jobA, a.runId],
      [jobB, "b"],
    ] as const) {
      expect(job.headers).toEqual({ ...headers, [HEADER_RUN_ID]: runId, [HEADER_STEP]: "0" });
      expect(Object.keys(job.headers!)).toEqual([...Object.keys(headers), HEADER_RUN_ID, HEADER_STEP]);
      expect(job).toMatchObject({ priority: 3, maxAttempts: 4, state: "scheduled", dedupKey: `run:${runId}:0` });
    }
    await env.stop();
  });

  it("refuses what a caller's id refuses, writing nothing: a reserved header, a bad priority, unknown fields", async () => {
    const env = await openEnv(echo, { start: false });
    await expect(env.runtime.submit({ input: enc("x"), options: { headers: { "workflow.x": "v" } } })).rejects.toBeInstanceOf(ReservedHeaderError);
    await expect(env.runtime.submit({ input: enc("x"), options: { priority: -1 } })).rejects.toThrow(/priority/);
    await expect(env.runtime.submit({ input: enc("x"), options: { priority: 1.5 } })).rejects.toBeInstanceOf(ValidationError);
    await expect(env.runtime.submit({ input: enc("x"), options: { maxAttemptsPerStep: 0 } })).rejects.toThrow(/maxAttemptsPerStep/);
    await expect(env.runtime.submit({ input: enc("x"), options: { runat: 5 } as never })).rejects.toThrow(/runat/);
    await expect(env.runtime.submit({ input: enc("x"), optoins: {} } as never)).rejects.toThrow(/optoins/);
    await expect(env.runtime.submit({ input: enc("x"), options: { headers: { h: "\ud800" } } })).rejects.toBeInstanceOf(ValidationError);
    expect((await env.queue.view().stats("workflow-steps")).pending + (await env.queue.view().stats("workflow-steps")).scheduled).toBe(0);
    await env.stop();
  });
});
