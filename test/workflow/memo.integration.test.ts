/**
 * @module Memos in a running runtime: a retried step observes the memoized
 * value, the run memo is shared by the run's steps, and entries live under
 * the memo prefix.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

describe("memoizing within-step side effects", () => {
  it("a retried step observes the memoized value instead of repeating the call", async () => {
    let calls = 0;
    let attempts = 0;
    const env = await openEnv(
      runnerOf(async (s) => {
        attempts++;
        const draft = await s.memo.memoized("draft", async () => {
          calls++;
          return { text: `draft of ${dec(s.payload)}` };
        });
        const byContent = await s.memo.memoizedByContent({ op: "summary", input: s.payload }, async () => {
          calls++;
          return "summary";
        });
        if (attempts === 1) throw StepError.transient("crash after the call");
        return StepOutcome.succeed(enc(`${draft.text}/${byContent}`));
      }),
    );
    await env.runtime.submit({ input: enc("doc"), runId: "m" });
    // Until the first attempt's retry is on record: advanced before that, the clock would move the retry with it.
    await until(async () => attempts === 1 && (await env.queue.view().stats("workflow-steps")).scheduled === 1, "first attempt's retry scheduled");
    env.clock.advance(1000);
    const end = await env.runtime.wait("m");
    expect(dec(end.outcome!.result)).toBe("draft of doc/summary");
    expect(calls).toBe(2);
    expect(attempts).toBe(2);
    await env.stop();
  });

  it("the run memo is shared by every step; per-step memos are not", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        const journal = dec((await s.runMemo.get("journal")) ?? enc(""));
        await s.runMemo.put("journal", enc(`${journal}${s.stepNumber};`));
        const own = await s.memo.get("own");
        await s.memo.put("own", enc("x"));
        if (own !== null) throw StepError.permanent("per-step memo leaked across steps");
        return s.stepNumber < 2 ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(enc(`${journal}${s.stepNumber};`));
      }),
    );
    await env.runtime.submit({ input: enc("x"), runId: "j" });
    expect(dec((await env.runtime.wait("j")).outcome!.result)).toBe("0;1;2;");
    await env.stop();
  });

  it("stores entries under {queueName}-memo by default and under a configured prefix", async () => {
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("k", enc("v"));
        return StepOutcome.succeed(s.payload);
      }),
      { configure: (b) => b.memoPrefix("custom-memo") },
    );
    await env.runtime.submit({ input: enc("x"), runId: "p" });
    await env.runtime.wait("p");
    const keys: string[] = [];
    for await (const o of env.store.list("custom-memo/")) keys.push(o.key);
    expect(keys.some((k) => /^custom-memo\/memos\/p\/@[^/]+\/0\//.test(k))).toBe(true);
    expect(env.runtime.memoStore.prefix).toBe("custom-memo");
    await env.stop();
    const env2 = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    expect(env2.runtime.memoStore.prefix).toBe("workflow-steps-memo");
    await env2.stop();
  });
});
