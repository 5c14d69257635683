/**
 * @module Odd and absurd values at the workflow's public calls, each
 * ending in a typed error that names what the caller passed (and changes
 * nothing durable), or in the correct result: attempt limits past what a
 * number holds exactly, a signal correlation key with a NUL character,
 * header names that are `Object.prototype` members and control
 * characters.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, ValidationError, type StepRunner } from "taquba";
import { dec, enc, openEnv } from "./helpers.js";

const echoHeaders: StepRunner = {
  async runStep(s) {
    if (dec(s.payload) === "wait") return StepOutcome.continueOnSignal(enc("woken"), "a\u0000b", 3_600_000);
    return StepOutcome.succeed(enc(JSON.stringify({ headers: s.headers, signal: s.signal === undefined || s.signal === null ? null : dec(s.signal) })));
  },
};

describe("absurd values at the workflow's calls", () => {
  it("an attempt limit past 2^53 - 1 is refused naming RunOptions.maxAttemptsPerStep, and no run is made", async () => {
    const env = await openEnv(echoHeaders);
    try {
      for (const bad of [1e30, 2 ** 53, Number.MAX_VALUE]) {
        const err = await env.runtime.submit({ runId: "big", input: enc("x"), options: { maxAttemptsPerStep: bad } }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(ValidationError);
        expect((err as Error).message).toContain("RunOptions.maxAttemptsPerStep must be an integer from 1 to 9007199254740991");
        expect(await env.runtime.status("big")).toBeNull();
      }
      // The largest exact integer is taken.
      const { runId } = await env.runtime.submit({ input: enc("x"), options: { maxAttemptsPerStep: Number.MAX_SAFE_INTEGER } });
      expect((await env.runtime.wait(runId)).termination.status).toBe("succeeded");
    } finally {
      await env.stop();
    }
  });

  it("a correlation key with a NUL character is its own key: the signal for it wakes the step, one without it does not", async () => {
    const env = await openEnv(echoHeaders);
    try {
      const { runId } = await env.runtime.submit({ input: enc("wait") });
      await env.runtime.signal("a", enc("not this"));
      await env.runtime.signal("ab", enc("nor this"));
      expect(await env.runtime.signal("a\u0000b", enc("this"))).toMatch(/delivered|buffered/);
      const end = await env.runtime.wait(runId);
      expect(JSON.parse(dec(end.outcome?.result)).signal).toBe("this");
    } finally {
      await env.stop();
    }
  });

  it("headers named after Object.prototype members or holding control characters reach every step as given", async () => {
    const env = await openEnv(echoHeaders);
    try {
      const headers = { constructor: "c", toString: "t", hasOwnProperty: "h", "a\u0000": "v\u0000", "\t": "\n" };
      const { runId } = await env.runtime.submit({ input: enc("x"), options: { headers } });
      const end = await env.runtime.wait(runId);
      expect(JSON.parse(dec(end.outcome?.result)).headers).toEqual(headers);
    } finally {
      await env.stop();
    }
  });
});
