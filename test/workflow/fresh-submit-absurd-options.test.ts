/**
 * @module A fresh run id's submission checks its spec once, reading each
 * field once (wave 45's submit): absurd option values, headers too large or
 * too many, throwing getters and proxies are refused as under a caller's
 * id, with a `ValidationError`, writing nothing; a getter that changes its
 * answer between reads is read once, its first answer submitted.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, ValidationError } from "taquba";
import { enc, openEnv, runnerOf } from "./helpers.js";

const echo = runnerOf(async (s) => StepOutcome.succeed(s.payload));

const throwing = (name: string) =>
  Object.defineProperty({}, name, {
    enumerable: true,
    get() {
      throw new Error(`${name} read`);
    },
  });

const refused: [string, () => unknown][] = [
  ["a NaN priority", () => ({ priority: Number.NaN })],
  ["an infinite priority", () => ({ priority: Number.POSITIVE_INFINITY })],
  ["a priority of 1e30", () => ({ priority: 1e30 })],
  ["NaN attempts", () => ({ maxAttemptsPerStep: Number.NaN })],
  ["1e30 attempts", () => ({ maxAttemptsPerStep: 1e30 })],
  ["an infinite start", () => ({ runAt: Number.POSITIVE_INFINITY })],
  ["a start of 1e30", () => ({ runAt: 1e30 })],
  ["a NaN start", () => ({ runAt: Number.NaN })],
  ["a NaN debounce period", () => ({ debounce: { key: "k", periodMs: Number.NaN } })],
  ["a header of 1 MB", () => ({ headers: { h: "x".repeat(1_000_000) } })],
  ["10,000 headers", () => ({ headers: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`h${i}`, "v"])) })],
  ["a __proto__ header", () => ({ headers: JSON.parse('{"__proto__":"x"}') })],
  ["a header that is a number", () => ({ headers: { a: 5 } })],
  ["headers that are an array", () => ({ headers: ["a"] })],
  ["a header whose getter throws", () => ({ headers: throwing("h") })],
  ["a priority whose getter throws", () => throwing("priority")],
  [
    "options that are a proxy refusing its keys",
    () =>
      new Proxy(
        {},
        {
          ownKeys: () => {
            throw new Error("keys");
          },
        },
      ),
  ],
  [
    "headers that are a proxy refusing reads",
    () => ({
      headers: new Proxy(
        { a: "b" },
        {
          get: () => {
            throw new Error("read");
          },
        },
      ),
    }),
  ],
];

describe("a fresh run id's submission with absurd options", () => {
  it("refuses each as a caller's id does, with a ValidationError, writing nothing", async () => {
    const env = await openEnv(echo, { start: false });
    for (const [what, options] of refused) {
      for (const runId of [undefined, "named"]) {
        const spec = { input: enc("x"), ...(runId === undefined ? {} : { runId }), options: options() as never };
        await expect(env.runtime.submit(spec), `${what} under ${runId ?? "a drawn id"}`).rejects.toBeInstanceOf(ValidationError);
      }
    }
    const stats = await env.queue.view().stats("workflow-steps");
    expect(stats.pending + stats.scheduled).toBe(0);
    expect(await env.runtime.status("named")).toBeNull();
    await env.stop();
  });

  it("reads a getter that changes its answer once: the first answer is the one submitted", async () => {
    const env = await openEnv(echo, { start: false });
    let reads = 0;
    const options = Object.defineProperty({}, "priority", { enumerable: true, get: () => (reads++ === 0 ? 7 : -5) });
    const out = await env.runtime.submit({ input: enc("x"), options });
    expect(reads).toBe(1);
    expect((await env.queue.view().job(out.jobId))?.priority).toBe(7);
    await env.stop();
  });
});
