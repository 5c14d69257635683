/**
 * @module The typed layer's option objects refuse a field that is no option:
 * `JobRunner.over`'s options, a typed job's submit options and a typed
 * workflow client's submit options. A `ValidationError` names the field and
 * suggests the close name, before anything is written; spelt right, each is
 * taken.
 */
import { describe, expect, it } from "vitest";
import {
  createValidator,
  defineHeaders,
  defineWorkflow,
  JobRunner,
  MemoryStore,
  NoopTerminalHook,
  Queue,
  WorkflowDispatcher,
  workflowClient,
  WorkflowRuntime,
  withCounting,
} from "taquba";
import { emailJob, openJobEnv } from "./fixtures.js";
import { refusal } from "../support/refusal.js";

const anything = createValidator<{ text: string }>(
  "echo input",
  Object.assign(() => true, { errors: null }),
);
const echo = defineWorkflow({
  name: "echo.say",
  package: "echo",
  input: anything,
  result: anything,
  headers: defineHeaders({
    package: "echo",
    names: [],
    required: [],
    validator: createValidator<Record<string, never>>(
      "echo headers",
      Object.assign(() => true, { errors: null }),
    ),
  }),
  entry: "say",
  steps: { say: { method: "say", payload: anything, next: [] } },
  contractHash: "0",
});

describe("the typed layer's options refuse a field that is no option", () => {
  it("a typed job's submit options, before anything is written", async () => {
    const store = withCounting(new MemoryStore());
    const env = await openJobEnv((b) => b.register(emailJob, { run: async () => ({ message_id: "m" }) }), { store, start: false });
    try {
      store.reset();
      const err = await refusal(() => env.runner.submit(emailJob, { to: "a@b.c" }, { maxAtempts: 2 } as never));
      expect(err.issues).toEqual([
        "JobSubmitOptions.maxAtempts is not an option (misspelt?); the options are headers, priority, runAt, idempotencyKey, maxAttempts, notifySignal; did you mean maxAttempts?",
      ]);
      expect(store.counts.puts).toBe(0);
      expect((await env.runner.listJobs()).runs).toEqual([]);
      await env.runner.submit(emailJob, { to: "a@b.c" }, { maxAttempts: 2 });
      expect((await env.runner.listJobs()).runs).toHaveLength(1);
    } finally {
      await env.stop();
    }
  });

  it("a job group's submit options, refused under their own name and list, before anything is written", async () => {
    const store = withCounting(new MemoryStore());
    const env = await openJobEnv((b) => b.register(emailJob, { run: async () => ({ message_id: "m" }) }), { store, start: false });
    try {
      store.reset();
      const group = env.runner.group("g-1", emailJob);
      const err = await refusal(() => group.submit([{ to: "a@b.c" }], { priorty: 2 } as never));
      expect(err.message).toMatch(/^JobGroupSubmitOptions has a field that is not an option/);
      expect(err.issues).toEqual([
        "JobGroupSubmitOptions.priorty is not an option (misspelt?); the options are headers, priority, runAt, maxAttempts; did you mean priority?",
      ]);
      // The fields a group refuses by name keep their own, clearer message.
      await expect(group.submit([{ to: "a@b.c" }], { idempotencyKey: "k" } as never)).rejects.toThrow(/drop idempotencyKey/);
      expect(store.counts.puts).toBe(0);
      expect((await env.runner.listJobs()).runs).toEqual([]);
      await group.submit([{ to: "a@b.c" }], { priority: 2 });
      expect((await env.runner.listJobs()).runs).toHaveLength(1);
    } finally {
      await env.stop();
    }
  });

  it("a typed workflow client's submit options, before anything is written", async () => {
    const store = withCounting(new MemoryStore());
    const queue = await Queue.open(store, "app");
    const dispatcher = WorkflowDispatcher.builder()
      .register(echo, { say: async (p: { text: string }, ctx: { succeed(r: { text: string }): never }) => ctx.succeed(p) } as never)
      .build();
    const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook).build();
    try {
      const client = workflowClient(echo, runtime, "echo");
      store.reset();
      const err = await refusal(() => client.submit({ text: "hi" }, { runid: "r-1" } as never));
      expect(err.issues).toEqual([
        "WorkflowSubmitOptions.runid is not an option (misspelt?); the options are headers, runId, priority, maxAttemptsPerStep, runAt, effects; did you mean runId?",
      ]);
      expect(store.counts.puts).toBe(0);
      await expect(client.submit({ text: "hi" }, { runId: "r-1" })).resolves.toMatchObject({ runId: "r-1", newlySubmitted: true });
    } finally {
      await runtime.close();
    }
  });

  it("JobRunner.over's options", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "app");
    const dispatcher = WorkflowDispatcher.builder().build();
    const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook).build();
    try {
      const err = await refusal(() => JobRunner.over(queue, runtime, dispatcher, { resultRetention: 1000 } as never));
      expect(err.issues).toEqual([
        "JobRunnerOptions.resultRetention is not an option (misspelt?); the options are pollIntervalMs, resultRetentionMs, clock, logger; did you mean resultRetentionMs?",
      ]);
      expect(() => JobRunner.over(queue, runtime, dispatcher, { resultRetentionMs: 1000 })).not.toThrow();
    } finally {
      await runtime.close();
    }
  });
});
