/**
 * @module `WorkflowRuntime.builder` refuses, by `build()` at the latest, what would only
 * fail later and in the background: a queue, store, runner or hook that is
 * not one; a memo prefix no object key can start with (every memo, replay
 * and result record would fail); a clock that reads no time (every step's
 * settlement would fail and the runs never end); a logger that is not an
 * object (a string dropped every log line). Each is a `ValidationError`
 * saying what was wrong.
 */
import { describe, expect, it } from "vitest";
import { MAX_CONCURRENT_STEPS, MemoryStore, NoopTerminalHook, Queue, StepOutcome, ValidationError, WorkflowRuntime, type Clock, type Logger } from "taquba";

const runner = { runStep: async () => StepOutcome.succeed(new Uint8Array(1)) };

async function withQueue(act: (queue: Queue, store: MemoryStore) => void | Promise<void>): Promise<void> {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "wf");
  try {
    await act(queue, store);
  } finally {
    await queue.close();
  }
}

const refusal = (act: () => unknown): ValidationError => {
  try {
    act();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return err as ValidationError;
  }
  throw new Error("expected a ValidationError");
};

describe("WorkflowRuntime.builder refuses what would fail later", () => {
  it("a queue, store, runner or hook that is not one, all named at once", () =>
    withQueue((queue, store) => {
      const err = refusal(() => WorkflowRuntime.builder(null as unknown as Queue, {} as MemoryStore, { run: 1 } as never, null as never).build());
      expect(err.issues).toEqual([
        "the queue must be a Queue (from Queue.open), got null",
        "the store must be an ObjectStore (get, put, delete, list), got an object",
        "the runner must be an object with a runStep(step) method, got an object",
        "the terminal hook must be an object with an onTermination(outcome, effects) method (NoopTerminalHook for none), got null",
      ]);
      expect(() => WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build()).not.toThrow();
    }));

  it.each([
    ["a '..' segment", "../memo", /'\.\.' segment/],
    ["an empty segment", "a//memo", /empty segment/],
    ["a NUL", "me\0mo", /NUL/],
    ["a lone surrogate", "memo\ud800", /lone UTF-16 surrogate/],
    ["more bytes than leave room for its keys", "é".repeat(400), /memoPrefix must be at most 768 bytes .* got 800/],
  ])("a memo prefix with %s", (_label, prefix, says) =>
    withQueue((queue, store) => {
      const b = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook);
      const err = refusal(() => b.memoPrefix(prefix));
      expect([err.message, ...err.issues].join("\n")).toMatch(says);
      expect(() => b.memoPrefix("m".repeat(768)).build()).not.toThrow();
    }),
  );

  it("a clock that is not one or reads no time, and a logger that is not an object", () =>
    withQueue((queue, store) => {
      const b = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook);
      expect(refusal(() => b.clock(null as unknown as Clock)).message).toMatch(/clock must be an object with a now\(\) method, got null/);
      expect(refusal(() => b.clock({ now: () => Number.NaN })).message).toMatch(/now\(\) must return milliseconds since the epoch, got NaN/);
      expect(refusal(() => b.logger(null as unknown as Logger)).message).toMatch(/logger must be an object .* got null/);
      expect(refusal(() => b.logger("pino" as unknown as Logger)).message).toMatch(/logger must be an object .* got "pino" \(a string\)/);
      expect(refusal(() => b.maxConcurrentSteps("4" as unknown as number)).message).toMatch(/maxConcurrentSteps must be an integer >= 1, got "4" \(a string\)/);
      expect(refusal(() => b.maxConcurrentSteps(1e30)).message).toMatch(/maxConcurrentSteps must be at most 65536 .* got 1e\+30/);
      expect(refusal(() => b.maxConcurrentSteps(MAX_CONCURRENT_STEPS + 1)).message).toMatch(/at most 65536/);
      expect(() => b.maxConcurrentSteps(MAX_CONCURRENT_STEPS)).not.toThrow();
    }));
});
