/**
 * @module Long-running steps: a step that extends its lease is not
 * redelivered; one that outlives its lease is delivered again.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { enc, openEnv, runnerOf, settle, until } from "./helpers.js";

describe("long-running steps", () => {
  it("a step that extends its lease is not redelivered by the reaper", async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let extended = false;
    const env = await openEnv(
      runnerOf(async (s) => {
        calls++;
        await s.lease.ensureAtLeast(3_600_000);
        extended = true;
        await gate;
        return StepOutcome.succeed(s.payload);
      }),
      { queueOptions: { queueConfigs: { "workflow-steps": { leaseMs: 1_000 } } } },
    );
    await env.runtime.submit({ input: enc("x"), runId: "long" });
    await until(() => extended, "lease extended");
    env.clock.advance(600_000);
    await settle(20);
    expect(calls).toBe(1);
    expect(await env.runtime.status("long")).toMatchObject({ state: "running" });
    release();
    expect((await env.runtime.wait("long")).termination.status).toBe("succeeded");
    await env.stop();
  });

  it("a step that outlives its lease is delivered again", async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const env = await openEnv(
      runnerOf(async (s) => {
        calls++;
        if (calls === 1) await gate;
        return StepOutcome.succeed(enc(`attempt ${s.attempt}`));
      }),
      { queueOptions: { queueConfigs: { "workflow-steps": { leaseMs: 1_000, maxAttempts: 3 } } } },
    );
    await env.runtime.submit({ input: enc("x"), runId: "short" });
    await until(() => calls === 1, "first delivery");
    env.clock.advance(10_000);
    const end = await env.runtime.wait("short");
    expect(calls).toBe(2);
    expect(new TextDecoder().decode(end.outcome!.result)).toBe("attempt 2");
    // The first delivery now finishes too; its settlement is refused (its
    // claim is lost) and it must not disturb the committed outcome.
    release();
    await until(() => env.logged.length > 0, "the stale delivery's refused settlement");
    expect(new TextDecoder().decode((await env.runtime.outcome("short"))!.result)).toBe("attempt 2");
    expect(new TextDecoder().decode((await env.runtime.wait("short")).outcome!.result)).toBe("attempt 2");
    await env.stop();
  });
});
