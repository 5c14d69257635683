/**
 * @module The `logger` option: the documented events reach a pino-style
 * logger (retries at warn with the error's stack, dead letters and fencing
 * at error, worker start/stop at info), a header the spec marks sensitive
 * never does, and the attempt history keeps the error's name and stack.
 */
import { createServer } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  FencedError,
  generateWebhookSecret,
  JobRunner,
  MemoryStore,
  MockClock,
  Queue,
  REDACTED,
  runWebhookWorker,
  StepError,
  StepOutcome,
  type StepRunner,
  WebhookTerminalHook,
  WorkflowRuntime,
} from "taquba";
import { listenOnLoopback, withBody } from "../support/loopback-server.js";
import { until } from "../support/until.js";
import { billing } from "../../generated/index.js";
import { consoleLogger, errorFields, fullLogger, MAX_STACK_CHARS } from "../../runtime/logger.js";

interface Entry {
  level: "debug" | "info" | "warn" | "error";
  obj: Record<string, unknown>;
  msg: string;
}

/** A pino-shaped logger whose methods need `this`, as pino's do. */
class RecordingLogger {
  readonly entries: Entry[] = [];
  debug(obj: Record<string, unknown>, msg: string) {
    this.entries.push({ level: "debug", obj, msg });
  }
  info(obj: Record<string, unknown>, msg: string) {
    this.entries.push({ level: "info", obj, msg });
  }
  warn(obj: Record<string, unknown>, msg: string) {
    this.entries.push({ level: "warn", obj, msg });
  }
  error(obj: Record<string, unknown>, msg: string) {
    this.entries.push({ level: "error", obj, msg });
  }
  text(): string {
    return JSON.stringify(this.entries, (_k, v: unknown) => (v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v));
  }
}

const SECRET = "https://hooks.example/cb?token=s3cr3t-TOKEN";

function failOnceThenSend(): billing.EmailSendHandler & { calls: number } {
  return {
    calls: 0,
    async run(input) {
      this.calls++;
      if (this.calls === 1) throw new Error(`smtp timeout sending to ${input.to}`);
      if (input.to.startsWith("perm")) throw StepError.permanent(new TypeError("mailbox name is malformed"));
      return { message_id: `m-${this.calls}` };
    },
  };
}

const invoiceRender: billing.InvoiceRenderHandler = {
  async run() {
    return { object_key: "k", total: { amount_cents: 0, currency: "EUR" } };
  },
};

async function openEnv(log: RecordingLogger, handler: billing.EmailSendHandler) {
  const store = new MemoryStore();
  const clock = new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "q", {
    flushIntervalMs: 1,
    clock,
    logger: log,
    queueConfigs: { jobs: { backoff: { baseMs: 0, maxMs: 0 }, maxAttempts: 3, doneRetentionMs: 3_600_000 } },
  });
  const runner = billing.register(JobRunner.builder(queue, store).pollIntervalMs(3_600_000).logger(log), { emailSend: handler, invoiceRender }).build();
  return { store, clock, queue, runner };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("logger option", () => {
  it("logs a retry at warn with the error's stack, worker start/stop at info, and never a sensitive header", async () => {
    const log = new RecordingLogger();
    const env = await openEnv(log, failOnceThenSend());
    const worker = env.runner.spawn();
    const h = await billing.client(env.runner).emailSend.submit({ to: "a@b.co", subject: "Hi" }, { headers: { tenant_id: "acme", callback_url: SECRET } });
    expect(await h.result()).toEqual({ status: "succeeded", output: { message_id: "m-2" } });
    await worker.shutdown();
    await env.queue.close();

    const warn = log.entries.filter((e) => e.level === "warn");
    expect(warn).toHaveLength(1);
    const retry = warn[0]!;
    expect(retry.msg).toMatch(/attempt 1 of 5 failed; retrying/);
    const err = retry.obj["err"] as { name: string; message: string; stack: string };
    expect(err.name).toBe("Error");
    expect(err.message).toBe("smtp timeout sending to a@b.co");
    expect(err.stack).toMatch(/failOnceThenSend|run/);
    expect(retry.obj).toMatchObject({ attempt: 1, maxAttempts: 5, outcome: "retried", queue: "jobs" });
    expect(retry.obj["headers"]).toEqual({ tenant_id: "acme", callback_url: REDACTED });
    const info = log.entries.filter((e) => e.level === "info").map((e) => e.msg);
    expect(info).toEqual([
      expect.stringMatching(/^queue "q": this process is now the writer of its store/),
      "workflow worker started",
      "workflow worker stopped",
    ]);
    expect(log.entries.filter((e) => e.level === "error")).toEqual([]);
    // The secret appears nowhere, in any record, at any level.
    expect(log.text()).not.toContain("s3cr3t-TOKEN");
  });

  it("keeps the thrown error's name and stack in the attempt history, bounded", async () => {
    const log = new RecordingLogger();
    const env = await openEnv(log, failOnceThenSend());
    const worker = env.runner.spawn();
    const h = await billing.client(env.runner).emailSend.submit({ to: "a@b.co", subject: "Hi" }, { headers: { tenant_id: "acme" } });
    await h.result();
    await worker.shutdown();
    const jobId = log.entries.find((e) => e.level === "warn")!.obj["jobId"] as string;
    const history = await env.queue.view().attemptHistory(jobId);
    expect(history[0]).toMatchObject({ attempt: 1, outcome: "retried", errorName: "Error" });
    expect(history[0]!.error).toContain("smtp timeout sending to a@b.co");
    expect(history[0]!.errorStack).toMatch(/^Error: smtp timeout/);
    await env.queue.close();

    const huge = new Error("x".repeat(1e6));
    const f = errorFields(huge);
    expect(f.message.length).toBeLessThan(2_100);
    expect(f.stack!.length).toBeLessThan(MAX_STACK_CHARS + 100);
    expect(errorFields("plain string")).toEqual({ name: "NonError", message: "plain string" });
  });

  it("logs a permanent failure at error (the workflow's dead letter and the queue's), with the error's name", async () => {
    const log = new RecordingLogger();
    const handler = failOnceThenSend();
    handler.calls = 1; // the next call is the permanent failure
    const env = await openEnv(log, handler);
    const worker = env.runner.spawn();
    const h = await billing.client(env.runner).emailSend.submit({ to: "perm@b.co", subject: "Hi" }, { headers: { tenant_id: "acme", callback_url: SECRET } });
    expect((await h.result()).status).toBe("failed");
    await worker.shutdown();
    await env.queue.close();
    const errors = log.entries.filter((e) => e.level === "error");
    const step = errors.find((e) => e.obj["outcome"] === "dead_lettered");
    expect(step?.obj["err"]).toMatchObject({ name: "TypeError", message: "mailbox name is malformed" });
    expect(errors.some((e) => /was dead-lettered after attempt 1/.test(e.msg))).toBe(true);
    expect(log.text()).not.toContain("s3cr3t-TOKEN");
  });

  it("logs fencing once at error when another process opens the same queue store", async () => {
    const store = new MemoryStore();
    const log = new RecordingLogger();
    const first = await Queue.open(store, "q", { flushIntervalMs: 1, logger: log });
    await first.enqueue("jobs", new Uint8Array([1]));
    const second = await Queue.open(store, "q", { flushIntervalMs: 1, logger: new RecordingLogger() });
    await expect(first.enqueue("jobs", new Uint8Array([2]))).rejects.toBeInstanceOf(FencedError);
    await first.enqueue("jobs", new Uint8Array([3])).catch(() => undefined);
    const fenced = log.entries.filter((e) => e.level === "error" && /fenced this one/.test(e.msg));
    expect(fenced).toHaveLength(1);
    await second.close();
    await first.close().catch(() => undefined);
  });

  it("never logs a payload, a webhook secret or a sensitive header, at any level, through a run's retry, end and dead-lettered callback", async () => {
    // Everything that reaches the console too (the webhook loop's default error reporting included).
    const consoleText: string[] = [];
    for (const m of ["debug", "info", "warn", "error", "log"] as const)
      vi.spyOn(console, m).mockImplementation((...a: unknown[]) => void consoleText.push(JSON.stringify(a)));
    const server = createServer(withBody((_req, _body, res) => res.writeHead(400).end("bad request")));
    const { port, close } = await listenOnLoopback(server);
    const log = new RecordingLogger();
    const webhookSecret = generateWebhookSecret();
    const payload = "PAYLOAD-d41d8cd98f00";
    const clock = new MockClock();
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q", {
      clock,
      flushIntervalMs: 1,
      logger: log,
      queueConfigs: { "workflow-steps": { backoff: { baseMs: 0, maxMs: 0 } } },
    });
    let calls = 0;
    const runner: StepRunner = {
      sensitiveHeaders: ["callback_url", "api_key"],
      async runStep(s) {
        if (++calls === 1) throw new Error("flaky downstream");
        return StepOutcome.succeed(s.payload);
      },
    };
    const runtime = WorkflowRuntime.builder(queue, store, runner, new WebhookTerminalHook({ queueName: "callbacks" }))
      .clock(clock)
      .logger(log)
      .build();
    const worker = runtime.spawn();
    const ac = new AbortController();
    const delivering = runWebhookWorker(queue, "callbacks", { secret: webhookSecret, allowLoopback: true, clock, signal: ac.signal });
    try {
      const callback = `http://127.0.0.1:${port}/hooks/Xy12Ab34Cd56Ef78Gh90Ij12?key=QUERY-s3cr3t`;
      await runtime.submit({
        input: new TextEncoder().encode(payload),
        runId: "run-1",
        options: { headers: { callback_url: callback, api_key: "API-KEY-s3cr3t", tenant: "acme" } },
      });
      expect((await runtime.wait("run-1")).termination.status).toBe("succeeded");
      await until("the callback dead-lettered", () => log.entries.some((e) => /was dead-lettered/.test(e.msg)));
    } finally {
      ac.abort();
      await delivering;
      await worker.shutdown();
      await queue.close();
      await close();
    }
    // The events were logged: the retry (with the non-sensitive header) and the callback's dead letter.
    const retry = log.entries.find((e) => e.level === "warn" && /failed; retrying/.test(e.msg));
    expect(retry?.obj["headers"]).toEqual({ callback_url: REDACTED, api_key: REDACTED, tenant: "acme" });
    expect(log.entries.some((e) => e.level === "error" && /dead-lettered after attempt 1/.test(e.msg))).toBe(true);
    const everything = log.text() + consoleText.join("\n");
    for (const secret of [payload, webhookSecret, "Xy12Ab34Cd56Ef78Gh90Ij12", "QUERY-s3cr3t", "API-KEY-s3cr3t"]) expect(everything).not.toContain(secret);
  });

  it("accepts an object with only `error`, and console at warn drops info", () => {
    const seen: string[] = [];
    const l = fullLogger({ error: (_o, m) => seen.push(m) });
    l.info({}, "dropped");
    l.warn({}, "dropped");
    l.error({}, "kept");
    expect(seen).toEqual(["kept"]);
    const c = consoleLogger();
    const orig = console.info;
    let called = false;
    console.info = () => {
      called = true;
    };
    try {
      c.info({}, "quiet");
    } finally {
      console.info = orig;
    }
    expect(called).toBe(false);
  });
});
