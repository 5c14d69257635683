import { describe, expect, it } from "vitest";
import { JobNotFoundError, PermanentError } from "taquba";
import { until } from "../support/until.js";
import { keyedEmailJob, openJobEnv } from "./fixtures.js";

/**
 * The runtime's per-run records left in KV: everything under `workflow/` but
 * the contract guard's records and the run index backfill's mark, which
 * outlive runs by design.
 */
async function runRecords(queue: { kvScan(prefix: string): Promise<{ entries: { key: string }[] }> }): Promise<string[]> {
  return (await queue.kvScan("workflow/")).entries
    .map((e) => e.key)
    .filter((k) => !k.startsWith("workflow/contracts/") && !k.startsWith("workflow/run-index-backfilled/"));
}

describe("job result retention", () => {
  it("removes result, dedup and terminal records a window after the job ended; the key then runs again", async () => {
    const calls: string[] = [];
    const env = await openJobEnv((b) =>
      b.resultRetention(60_000).register(keyedEmailJob, {
        async run(input) {
          calls.push(input.to);
          if (input.to.startsWith("perm@")) throw new PermanentError("no such mailbox");
          return { message_id: `m-${input.to}` };
        },
      }),
    );
    const ok = await env.runner.submit(keyedEmailJob, { to: "a@x.io" });
    const perm = await env.runner.submit(keyedEmailJob, { to: "perm@x.io" });
    await ok.result();
    await perm.result();
    expect(await env.runner.sweepResults()).toBe(0);
    env.clock.advance(59_000);
    expect(await env.runner.sweepResults()).toBe(0);
    expect(await ok.fetchResult()).toMatchObject({ status: "succeeded" });
    expect((await env.runner.submit(keyedEmailJob, { to: "a@x.io" })).newlySubmitted).toBe(false);

    env.clock.advance(1_000);
    expect(await env.runner.sweepResults()).toBe(1);
    await expect(ok.fetchResult()).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(perm.fetchResult()).rejects.toBeInstanceOf(JobNotFoundError);
    expect((await env.queue.kvScan("jobs/")).entries.map((e) => e.key)).toEqual([`jobs/dedup/jobs/${perm.jobId}`]);
    expect(await runRecords(env.queue)).toEqual([]);

    // Both keys run again: the swept one and the one whose stale dedup record outlived its run.
    const again = await env.runner.submit(keyedEmailJob, { to: "a@x.io" });
    const permAgain = await env.runner.submit(keyedEmailJob, { to: "perm@x.io" });
    expect(again.newlySubmitted).toBe(true);
    expect(permAgain.newlySubmitted).toBe(true);
    expect(await again.output()).toEqual({ message_id: "m-a@x.io" });
    await permAgain.result();
    expect(calls).toEqual(["a@x.io", "perm@x.io", "a@x.io", "perm@x.io"]);
    await env.stop();
  });

  it("the running worker sweeps expired results at its poll interval", async () => {
    const env = await openJobEnv((b) => b.resultRetention(1_000).register(keyedEmailJob, { run: async (i) => ({ message_id: i.to }) }));
    const h = await env.runner.submit(keyedEmailJob, { to: "a@x.io" });
    await h.result();
    // A poll interval more per look: the sweep loop arms its next wait when its first sweep ends, which
    // may be after the job's result came back (and after a single advance, which would then wake nothing).
    await until("the worker's sweep of the job's records", async () => {
      if ((await env.queue.kvScan("jobs/")).entries.length === 0 && (await runRecords(env.queue)).length === 0) return true;
      env.clock.advance(3_600_000);
      return false;
    });
    await expect(h.fetchResult()).rejects.toBeInstanceOf(JobNotFoundError);
    await env.stop();
  });
});
