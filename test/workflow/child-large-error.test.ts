/**
 * @module A run whose step fails with a huge error text (thrown, or a
 * `fail` reason) still ends, at once and failed with that text: its
 * terminal record keeps a bounded excerpt, its result record the whole
 * text. A child that fails so (with a huge public message too) reaches its
 * parent, which reads the whole texts.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";

const HUGE = 400 * 1024;
/** The queue logs the dead-lettered steps' huge errors. */
const quiet = { queueOptions: { logger: { error: () => undefined } } };

const runner: StepRunner = {
  async runStep(s) {
    const p = dec(s.payload);
    if (p === "parent") {
      const c = await s.children.start({ input: enc("child"), options: { maxAttemptsPerStep: 1 } });
      return StepOutcome.continueOnChild(enc("join"), c.completionKey);
    }
    if (p === "join") {
      const o = await s.children.outcome(s.signal as Uint8Array);
      return StepOutcome.succeed(enc(`${o.status}:${o.errorKind}:${o.error?.length}:${o.publicError?.length}:${o.errorCode}`));
    }
    if (p === "fail") return StepOutcome.fail("f".repeat(HUGE));
    throw StepError.permanent(new Error("e".repeat(HUGE)), { publicMessage: "p".repeat(HUGE), code: "too_big" });
  },
};

describe("a huge error text", () => {
  it("ends a plain run failed on its first attempt, the whole text in its result record", async () => {
    const env = await openEnv(runner, quiet);
    try {
      await env.runtime.submit({ runId: "thrown", input: enc("throw") });
      await env.runtime.submit({ runId: "failed", input: enc("fail") });
      for (const [id, kind, ch] of [
        ["thrown", "permanent", "e"],
        ["failed", "runner", "f"],
      ] as const) {
        await until(async () => (await env.runtime.outcome(id)) !== null, `run ${id} ends`, 5000).catch(() => undefined);
        const status = await env.runtime.status(id);
        expect(status, id).toMatchObject({ state: "terminated", status: "failed", errorKind: kind });
        expect((status as { error?: string }).error?.startsWith(ch.repeat(100))).toBe(true);
        expect((await env.runtime.outcome(id))?.error).toBe(ch.repeat(HUGE));
        expect((await env.runtime.inspectRun(id))?.steps[0]?.attempts).toHaveLength(1);
      }
    } finally {
      await env.stop();
    }
  });

  it("of a child does not stop it from ending, and its parent reads the whole texts", async () => {
    const env = await openEnv(runner, quiet);
    try {
      await env.runtime.submit({ runId: "err", input: enc("parent") });
      await until(async () => (await env.runtime.outcome("err")) !== null, "the parent ends", 5000).catch(() => undefined);
      expect(await env.runtime.status("err-s0-0")).toMatchObject({ state: "terminated", status: "failed" });
      const o = await env.runtime.outcome("err");
      expect(o?.status).toBe("succeeded");
      expect(dec(o?.result)).toBe(`failed:permanent:${HUGE}:${HUGE}:too_big`);
    } finally {
      await env.stop();
    }
  });
});
