/**
 * @module The terminal hook: what it observes, its notification jobs and
 * their effects, retries and dead-letters of hook errors, and a throwing
 * `observes()`.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, type RunOutcome, type TerminalEffects, type TerminalHook } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

const echo = runnerOf(async (s) => (dec(s.payload) === "fail" ? StepOutcome.fail("asked to") : StepOutcome.succeed(s.payload)));

describe("terminal hook", () => {
  it("observes committed outcomes with headers; its effects commit with the notification's ack", async () => {
    const seen: RunOutcome[] = [];
    const hook: TerminalHook = {
      async onTermination(o: RunOutcome, fx: TerminalEffects) {
        seen.push(o);
        fx.put(`app/done/${o.runId}`, enc(o.status));
        fx.enqueue("emails", enc(`mail for ${o.runId}`));
      },
    };
    const env = await openEnv(echo, { hook });
    await env.runtime.submit({ input: enc("hi"), runId: "ok", options: { headers: { callback: "x" } } });
    await env.runtime.submit({ input: enc("fail"), runId: "bad" });
    await until(() => seen.length === 2, "two notifications");
    await until(async () => (await env.queue.kvGet("app/done/bad")) !== null, "effects");
    const ok = seen.find((o) => o.runId === "ok")!;
    expect(ok).toMatchObject({ status: "succeeded", headers: { callback: "x" }, finalStep: 0 });
    expect(dec(ok.result)).toBe("hi");
    expect(seen.find((o) => o.runId === "bad")).toMatchObject({ status: "failed", error: "asked to" });
    expect(dec(await env.queue.kvGet("app/done/ok"))).toBe("succeeded");
    expect((await env.queue.view().stats("emails")).pending).toBe(2);
    await env.stop();
  });

  it("observes() false skips the notification job; NoopTerminalHook creates none", async () => {
    const seen: string[] = [];
    const hook: TerminalHook = {
      observes: (o) => o.status !== "succeeded",
      async onTermination(o) {
        seen.push(o.runId);
      },
    };
    const env = await openEnv(echo, { hook });
    await env.runtime.submit({ input: enc("hi"), runId: "ok" });
    await env.runtime.submit({ input: enc("fail"), runId: "bad" });
    await env.runtime.wait("ok");
    await until(() => seen.length === 1, "one notification");
    const stats = await env.queue.view().stats("workflow-steps");
    expect(seen).toEqual(["bad"]);
    // Two steps plus one notification were acked.
    expect(stats.done).toBe(3);
    await env.stop();

    const env2 = await openEnv(echo);
    await env2.runtime.submit({ input: enc("hi"), runId: "n" });
    await env2.runtime.wait("n");
    await env2.stop();
    expect((await env2.queue.view().stats("workflow-steps")).done).toBe(1);
  });

  it("retries a transient hook error and dead-letters a permanent one", async () => {
    let calls = 0;
    const hook: TerminalHook = {
      async onTermination(o) {
        calls++;
        if (o.runId === "perm") throw StepError.permanent("hook cannot");
        if (calls < 3) throw new Error("hook flaky");
      },
    };
    const env = await openEnv(echo, { hook });
    await env.runtime.submit({ input: enc("x"), runId: "flaky", options: { maxAttemptsPerStep: 5 } });
    await until(() => calls === 1, "first hook call");
    env.clock.advance(1_000);
    await until(() => calls === 2, "second hook call");
    env.clock.advance(2_000);
    await until(() => calls === 3, "third hook call");
    await until(async () => (await env.queue.view().stats("workflow-steps")).done === 2, "notification acked");
    await env.runtime.submit({ input: enc("x"), runId: "perm" });
    await until(async () => (await env.queue.view().stats("workflow-steps")).dead === 1, "notification dead");
    const dead = await env.queue.view().deadJobs("workflow-steps");
    expect(dead[0]?.headers["workflow.terminal"]).toBe("1");
    expect(dead[0]?.lastError).toBe("hook cannot");
    expect((await env.runtime.status("perm"))?.state).toBe("terminated");
    await env.stop();
  });

  it("enqueues the notification on the dead-letter and exhausted-nack paths too", async () => {
    const seen: RunOutcome[] = [];
    const hook: TerminalHook = {
      async onTermination(o) {
        seen.push(o);
      },
    };
    const env = await openEnv(
      runnerOf(async (s) => {
        throw dec(s.payload) === "p" ? StepError.permanent("perm") : StepError.transient("trans");
      }),
      { hook },
    );
    await env.runtime.submit({ input: enc("p"), runId: "p" });
    await env.runtime.submit({ input: enc("t"), runId: "t", options: { maxAttemptsPerStep: 1 } });
    await until(() => seen.length === 2, "two notifications");
    expect(seen.map((o) => [o.runId, o.status, o.errorKind]).sort()).toEqual([
      ["p", "failed", "permanent"],
      ["t", "failed", "transient"],
    ]);
    await env.stop();
  });
});

describe("terminal hook robustness", () => {
  it("a throwing observes() still lets the run terminate, with a notification", async () => {
    const seen: string[] = [];
    const hook: TerminalHook = {
      observes() {
        throw new Error("buggy filter");
      },
      async onTermination(o) {
        seen.push(o.runId);
      },
    };
    const env = await openEnv(echo, { hook });
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    expect((await env.runtime.wait("r")).termination.status).toBe("succeeded");
    await until(() => seen.length === 1, "notification");
    await env.stop();
  });
});
