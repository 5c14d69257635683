/**
 * @module Lone surrogates in the texts a run stores. UTF-8 cannot hold one,
 * and storing one as it is turns it into U+FFFD without a word. A fail or
 * cancel reason is the caller's own text: it is refused at the call, and a
 * hand-built outcome holding one fails its step with a message about the
 * outcome. An error text a runner throws cannot be refused (it is the
 * failure): its lone surrogates are kept as visible escapes.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, ValidationError, type StepOutcome as Outcome } from "taquba";
import { enc, openEnv, until } from "./helpers.js";

const quiet = { queueOptions: { logger: { error: () => undefined } } };

async function endOf(env: Awaited<ReturnType<typeof openEnv>>, runId: string) {
  await until(async () => (await env.runtime.outcome(runId)) !== null, `run ${runId} ends`, 5000);
  return (await env.runtime.outcome(runId))!;
}

describe("lone surrogates in stored texts", () => {
  it("StepOutcome.fail and cancel refuse a reason with a lone surrogate", () => {
    for (const reason of ["\ud800", "a\udc00b", "x\ud83d"]) {
      expect(() => StepOutcome.fail(reason)).toThrow(ValidationError);
      expect(() => StepOutcome.cancel(reason)).toThrow(/StepOutcome\.cancel's reason .* lone surrogate/);
    }
    expect(StepOutcome.fail("ok \ud83d\ude00").kind).toBe("fail");
  });

  it("a hand-built fail outcome with a lone surrogate fails its step; no U+FFFD is stored", async () => {
    const env = await openEnv({ runStep: async () => ({ kind: "fail", reason: "bad \ud800" }) as Outcome }, quiet);
    try {
      await env.runtime.submit({ runId: "r", input: enc("x") });
      const o = await endOf(env, "r");
      expect(o).toMatchObject({ status: "failed", errorKind: "permanent" });
      expect(o.error).toMatch(/fail outcome's reason "bad \\ud800" is not well-formed text/);
      expect(o.error).not.toContain("\ufffd");
    } finally {
      await env.stop();
    }
  });

  it("a thrown error text and a public message keep their lone surrogates as escapes", async () => {
    const runner = {
      async runStep(): Promise<Outcome> {
        throw StepError.permanent(new Error("broke at \ud800 here"), { publicMessage: "sorry \udc00" });
      },
    };
    const env = await openEnv(runner, quiet);
    try {
      await env.runtime.submit({ runId: "t", input: enc("x") });
      const o = await endOf(env, "t");
      expect(o.status).toBe("failed");
      expect(o.error).toContain("broke at \\ud800 here");
      expect(o.publicError).toBe("sorry \\udc00");
      const status = (await env.runtime.status("t")) as { error?: string };
      expect(status.error).toContain("broke at \\ud800 here");
      for (const text of [o.error, o.publicError, status.error]) expect(text).not.toContain("\ufffd");
    } finally {
      await env.stop();
    }
  });
});
