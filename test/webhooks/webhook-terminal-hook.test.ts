/**
 * @module WebhookTerminalHook: the delivery job each run termination stages.
 */
import { describe, expect, it } from "vitest";
import { decodeWebhookJob, InvalidWebhookRequestError, RunId, StepError, TerminalEffects, WebhookTerminalHook, type RunOutcome } from "taquba";


const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

function outcome(over: Partial<RunOutcome> = {}): RunOutcome {
  return { runId: RunId.parse("run-1"), status: "succeeded", result: enc("done!"), headers: { callback_url: "https://example.com/cb" }, finalStep: 3, ...over };
}

async function staged(hook: WebhookTerminalHook, o: RunOutcome) {
  const effects = new TerminalEffects();
  await hook.onTermination(o, effects);
  effects.seal();
  return effects.toSettlementEffects().enqueues;
}

describe("WebhookTerminalHook", () => {
  it("observes only runs with a callback_url", () => {
    const hook = new WebhookTerminalHook({ queueName: "callbacks" });
    expect(hook.observes(outcome())).toBe(true);
    expect(hook.observes(outcome({ headers: {} }))).toBe(false);
    expect(hook.observes(outcome({ headers: { callback_url: "" } }))).toBe(false);
  });

  it("stages one delivery carrying the result and the run's identity", async () => {
    const hook = new WebhookTerminalHook({ queueName: "callbacks", headers: { Authorization: "Bearer t" }, timeoutMs: 4_000, maxAttempts: 9 });
    const [job, ...rest] = await staged(hook, outcome());
    expect(rest).toHaveLength(0);
    expect(job!.queueName).toBe("callbacks");
    expect(job!.opts?.maxAttempts).toBe(9);
    const req = decodeWebhookJob(job!.opts!.headers!, job!.payload);
    expect(req.url.href).toBe("https://example.com/cb");
    expect(req.method).toBe("POST");
    expect(req.timeoutMs).toBe(4_000);
    expect(req.headers).toEqual({
      "Content-Type": "application/octet-stream",
      Authorization: "Bearer t",
      "Workflow-Run-Id": "run-1",
      "Workflow-Run-Status": "succeeded",
    });
    expect(dec(req.body)).toBe("done!");
  });

  it("sends the error text for failed and cancelled runs", async () => {
    const hook = new WebhookTerminalHook({ queueName: "callbacks" });
    const [failed] = await staged(hook, outcome({ status: "failed", result: undefined, error: "card declined" }));
    const req = decodeWebhookJob(failed!.opts!.headers!, failed!.payload);
    expect(dec(req.body)).toBe("card declined");
    expect(req.headers["Workflow-Run-Status"]).toBe("failed");
    expect(req.headers["Content-Type"]).toMatch(/^text\/plain/);
    const [cancelled] = await staged(hook, outcome({ status: "cancelled", result: undefined }));
    expect(dec(cancelled!.payload)).toBe("cancelled");
  });

  it("stages nothing without a callback_url", async () => {
    expect(await staged(new WebhookTerminalHook({ queueName: "callbacks" }), outcome({ headers: {} }))).toHaveLength(0);
  });

  it("dead-letters a bad callback_url instead of retrying it", async () => {
    const hook = new WebhookTerminalHook({ queueName: "callbacks" });
    const err = await staged(hook, outcome({ headers: { callback_url: "javascript:alert(1)" } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StepError);
    expect((err as StepError).kind).toBe("permanent");
    expect((err as Error).message).toMatch(/only http: and https:/);
  });

  it("refuses unusable options at construction", () => {
    expect(() => new WebhookTerminalHook({ queueName: "callbacks", headers: { Host: "x" } })).toThrow(InvalidWebhookRequestError);
    expect(() => new WebhookTerminalHook({ queueName: "callbacks", timeoutMs: -1 })).toThrow(InvalidWebhookRequestError);
  });

  it("lets a caller's own content type replace the default rather than clash with it", async () => {
    const hook = new WebhookTerminalHook({ queueName: "callbacks", headers: { "content-type": "application/json" } });
    for (const o of [outcome(), outcome({ status: "failed", result: undefined, error: "no" })]) {
      const [job] = await staged(hook, o);
      const req = decodeWebhookJob(job!.opts!.headers!, job!.payload);
      const contentTypes = Object.entries(req.headers).filter(([k]) => k.toLowerCase() === "content-type");
      expect(contentTypes).toEqual([["content-type", "application/json"]]);
    }
  });
});
