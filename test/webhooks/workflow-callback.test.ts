/**
 * @module Run-end callbacks end to end: a workflow runtime with WebhookTerminalHook
 * and a webhook worker posting to a loopback receiver.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import {
  generateWebhookSecret,
  MemoryStore,
  MockClock,
  Queue,
  runWebhookWorker,
  StepError,
  StepOutcome,
  verifyWebhook,
  WebhookTerminalHook,
  WorkflowRuntime,
} from "taquba";
import { listenOnLoopback, withBody } from "../support/loopback-server.js";
import { until } from "../support/until.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("WebhookTerminalHook with a workflow runtime", () => {
  it("posts each run's termination, signed, to its callback_url; runs without one send nothing", async () => {
    const clock = new MockClock();
    const secret = generateWebhookSecret();
    const received: Array<{ headers: IncomingHttpHeaders; body: string; id: string }> = [];
    const server = createServer(
      withBody((req, body, res) => {
        try {
          const { id } = verifyWebhook(secret, req.headers, body, { now: clock.now() });
          received.push({ headers: req.headers, body: body.toString(), id });
          res.writeHead(204).end();
        } catch {
          res.writeHead(401).end();
        }
      }),
    );
    const { port, close } = await listenOnLoopback(server);
    cleanups.push(close);
    const callbackUrl = `http://127.0.0.1:${port}/runs/done`;

    const store = new MemoryStore();
    const queue = await Queue.open(store, "wf", { clock, flushIntervalMs: 1 });
    cleanups.push(() => queue.close());
    const internal = new Error("connect ECONNREFUSED 10.0.0.5:5432 (postgres://app:password@db.internal/prod)");
    const runner = {
      runStep: async (s: { payload: Uint8Array }) => {
        const input = dec(s.payload);
        if (input === "leak") throw StepError.permanent(internal);
        if (input === "public") throw StepError.permanent(internal, { publicMessage: "the payment service is down", code: "payment_down" });
        return input === "fail" ? StepOutcome.fail("card declined") : StepOutcome.succeed(s.payload);
      },
    };
    const runtime = WorkflowRuntime.builder(queue, store, runner, new WebhookTerminalHook({ queueName: "callbacks" }))
      .clock(clock)
      .build();
    const handle = runtime.spawn();
    cleanups.push(() => handle.shutdown());
    const ac = new AbortController();
    const delivering = runWebhookWorker(queue, "callbacks", { secret, allowLoopback: true, clock, signal: ac.signal });
    cleanups.push(async () => {
      ac.abort();
      await delivering;
    });

    await runtime.submit({ input: enc("paid"), runId: "order-1", options: { headers: { callback_url: callbackUrl } } });
    await runtime.submit({ input: enc("fail"), runId: "order-2", options: { headers: { callback_url: callbackUrl } } });
    await runtime.submit({ input: enc("quiet"), runId: "order-3" });
    await runtime.submit({ input: enc("leak"), runId: "order-4", options: { headers: { callback_url: callbackUrl } } });
    await runtime.submit({ input: enc("public"), runId: "order-5", options: { headers: { callback_url: callbackUrl } } });
    await runtime.wait("order-3");
    await until("four callbacks", async () => received.length === 4);

    const byRun = Object.fromEntries(received.map((r) => [r.headers["workflow-run-id"] as string, r]));
    expect(byRun["order-1"]).toMatchObject({ body: "paid", headers: { "workflow-run-status": "succeeded", "content-type": "application/octet-stream" } });
    expect(byRun["order-2"]).toMatchObject({ headers: { "workflow-run-status": "failed", "content-type": "application/json" } });
    // The runner's own fail reason is the message; it is text the application wrote to be seen.
    expect(JSON.parse(byRun["order-2"]!.body)).toEqual({ status: "failed", kind: "runner", code: "RUN_FAILED", message: "card declined" });
    // A step error's raw text stays on the server; what the application exposed is sent.
    expect(byRun["order-4"]!.body).not.toContain("password");
    expect(JSON.parse(byRun["order-4"]!.body)).toEqual({
      status: "failed",
      kind: "permanent",
      code: "STEP_PERMANENT",
      message: "the run failed; the details are kept with the run on the server",
    });
    expect(JSON.parse(byRun["order-5"]!.body)).toEqual({ status: "failed", kind: "permanent", code: "payment_down", message: "the payment service is down" });
    expect((await runtime.wait("order-4")).termination.error).toContain("password");
    expect(new Set(received.map((r) => r.id)).size).toBe(4);
    // The run without a callback_url staged no delivery; both deliveries were acknowledged.
    await until("callbacks acked", async () => {
      const s = await queue.view().stats("callbacks");
      return s.pending + s.scheduled + s.claimed === 0;
    });
    expect(received).toHaveLength(4);
  });
});
