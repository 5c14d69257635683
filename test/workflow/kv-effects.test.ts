/**
 * @module Application KV effects: applied with the step's settlement,
 * dropped when the step throws or fails permanently.
 */
import { describe, expect, it } from "vitest";
import { EffectsSealedError, InvalidEffectError, ReservedKeyError, SettlementEffects, StepError, StepOutcome, type Step } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

describe("application KV effects", () => {
  it("applies staged effects with the settlement of continue, succeed and fail", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        const id = s.runId;
        if (s.stepNumber === 0) {
          // Committed state only: the submit effects are visible, this step's own are not.
          expect(dec(await s.kv.get(`app/${id}/status`))).toBe("submitted");
          s.effects.put(`app/${id}/status`, enc("step0"));
          expect(dec(await s.kv.get(`app/${id}/status`))).toBe("submitted");
          return StepOutcome.continueNow(s.payload);
        }
        expect(dec(await s.kv.get(`app/${id}/status`))).toBe("step0");
        s.effects.put(`app/${id}/status`, enc(dec(s.payload)));
        s.effects.delete(`app/${id}/scratch`);
        return dec(s.payload) === "ok" ? StepOutcome.succeed(s.payload) : StepOutcome.fail("nope");
      }),
    );
    for (const [id, input] of [
      ["a", "ok"],
      ["b", "bad"],
    ] as const) {
      const effects = new SettlementEffects().kvPut(`app/${id}/status`, enc("submitted")).kvPut(`app/${id}/scratch`, enc("tmp"));
      await env.runtime.submit({ input: enc(input), runId: id, effects });
    }
    await env.runtime.wait("a");
    await env.runtime.wait("b");
    expect(dec(await env.queue.kvGet("app/a/status"))).toBe("ok");
    expect(dec(await env.queue.kvGet("app/b/status"))).toBe("bad");
    expect(await env.queue.kvGet("app/a/scratch")).toBeNull();
    expect(await env.queue.kvGet("app/b/scratch")).toBeNull();
    await env.stop();
  });

  it("drops staged effects when the step throws, keeps those of the retry that succeeds", async () => {
    let attempt = 0;
    const env = await openEnv(
      runnerOf(async (s) => {
        attempt++;
        s.effects.put(`app/attempt-${attempt}`, enc("x"));
        if (attempt === 1) throw StepError.transient("once");
        return StepOutcome.succeed(s.payload);
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(() => attempt === 1, "first attempt");
    env.clock.advance(1000);
    await env.runtime.wait("r");
    expect(await env.queue.kvGet("app/attempt-1")).toBeNull();
    expect(await env.queue.kvGet("app/attempt-2")).not.toBeNull();
    await env.stop();
  });

  it("drops effects of a permanent failure", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        s.effects.put("app/p", enc("x"));
        throw StepError.permanent("no");
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await env.runtime.wait("r");
    expect(await env.queue.kvGet("app/p")).toBeNull();
    await env.stop();
  });

  it("validates as staged and seals after the step returns", async () => {
    let kept: Step | undefined;
    const errors: unknown[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        kept = s;
        for (const f of [
          () => s.effects.put("workflow/runs/x", enc("1")),
          () => s.effects.put("app/big", new Uint8Array(256 * 1024 + 1)),
          () => {
            s.effects.put("app/k", enc("1"));
            s.effects.delete("app/k");
          },
        ]) {
          try {
            f();
          } catch (e) {
            errors.push(e);
          }
        }
        return StepOutcome.succeed(s.payload);
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await env.runtime.wait("r");
    expect(errors[0]).toBeInstanceOf(ReservedKeyError);
    expect(errors[1]).toBeInstanceOf(InvalidEffectError);
    expect(errors[2]).toBeInstanceOf(InvalidEffectError);
    expect(dec(await env.queue.kvGet("app/k"))).toBe("1");
    expect(() => kept!.effects.put("app/late", enc("1"))).toThrow(EffectsSealedError);
    await env.stop();
  });
});
