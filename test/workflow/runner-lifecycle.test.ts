/**
 * @module The worker's concurrency limit and graceful shutdown: in-flight
 * steps finish and nothing more is claimed.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { enc, openEnv, runnerOf, settle, until } from "./helpers.js";

describe("spawn, run and shutdown", () => {
  it("runs at most maxConcurrentSteps steps at once", async () => {
    let active = 0;
    let peak = 0;
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const env = await openEnv(
      runnerOf(async (s) => {
        active++;
        peak = Math.max(peak, active);
        await gate;
        active--;
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.maxConcurrentSteps(3) },
    );
    for (let i = 0; i < 8; i++) await env.runtime.submit({ input: enc("x"), runId: `r${i}` });
    await until(() => active === 3, "three running");
    await settle(20);
    expect(active).toBe(3);
    const first = release;
    gate = Promise.resolve(); // later steps run straight through
    first();
    for (let i = 0; i < 8; i++) await env.runtime.wait(`r${i}`);
    expect(peak).toBe(3);
    await env.stop();
  });

  it("graceful shutdown lets in-flight steps finish and stops claiming", async () => {
    let started = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const env = await openEnv(
      runnerOf(async (s) => {
        started++;
        await gate;
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.maxConcurrentSteps(1) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "inflight" });
    await env.runtime.submit({ input: enc("x"), runId: "queued" });
    await until(() => started === 1, "one running");
    let stopped = false;
    const stopping = env.worker!.shutdown().then(() => (stopped = true));
    await settle(10);
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(await env.runtime.status("inflight")).toMatchObject({ state: "terminated", status: "succeeded" });
    expect(await env.runtime.status("queued")).toMatchObject({ state: "pending" });
    expect(started).toBe(1);
    // run() with a shutdown promise.
    let trigger!: () => void;
    const shutdown = new Promise<void>((r) => (trigger = r));
    const running = env.runtime.run(shutdown);
    await env.runtime.wait("queued");
    trigger();
    await running;
    await env.queue.close();
  });
});
