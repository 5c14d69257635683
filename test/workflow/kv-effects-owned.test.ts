/**
 * @module A step's and a terminal hook's KV effects are checked and copied
 * once, when staged, and that copy is what commits: changing the array
 * given, or the bytes `staged()` hands out, before or after the settlement,
 * changes nothing stored or read.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type TerminalEffects } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

describe("step and terminal KV effects, copied once", () => {
  it("a step's staged value changed afterwards, through the caller's array or staged(), is stored as given", async () => {
    const given: Uint8Array[] = [];
    const handedOut: Uint8Array[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        const value = enc(`step${s.stepNumber}`);
        s.effects.put(`app/${s.stepNumber}`, value);
        value.fill(0x21);
        given.push(value);
        handedOut.push(s.effects.staged().puts[0]![1]);
        handedOut.at(-1)!.fill(0x22);
        return s.stepNumber === 0 ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await env.runtime.wait("r");
    for (const a of [...given, ...handedOut]) a.fill(0x23);
    expect(dec(await env.queue.kvGet("app/0"))).toBe("step0");
    expect(dec(await env.queue.kvGet("app/1"))).toBe("step1");
    expect(dec(env.queue.kvGetNow("app/1"))).toBe("step1");
    await env.stop();
  });

  it("a terminal hook's staged value changed afterwards is stored as given", async () => {
    const given: Uint8Array[] = [];
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      {
        hook: {
          async onTermination(outcome, effects: TerminalEffects) {
            const value = enc(outcome.status);
            effects.put(`app/end/${outcome.runId}`, value);
            value.fill(0x21);
            given.push(value);
          },
        },
      },
    );
    await env.runtime.submit({ input: enc("x"), runId: "r" });
    await until(async () => (await env.queue.kvGet("app/end/r")) !== null, "the hook's effect");
    for (const a of given) a.fill(0x23);
    expect(dec(await env.queue.kvGet("app/end/r"))).toBe("succeeded");
    expect(dec(env.queue.kvGetNow("app/end/r"))).toBe("succeeded");
    await env.stop();
  });
});
