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

  it("sends a classified notice for failed and cancelled runs, never the raw error text", async () => {
    const hook = new WebhookTerminalHook({ queueName: "callbacks" });
    const secret = "connect ECONNREFUSED 10.0.0.5:5432 (postgres://app:password@db.internal/prod)";
    const body = async (o: RunOutcome, h = hook) => {
      const [job] = await staged(h, o);
      const req = decodeWebhookJob(job!.opts!.headers!, job!.payload);
      expect(req.headers["Content-Type"]).toBe("application/json");
      return { text: dec(req.body), json: JSON.parse(dec(req.body)) as unknown, status: req.headers["Workflow-Run-Status"] };
    };
    const leaked = await body(outcome({ status: "failed", result: undefined, error: secret, errorKind: "transient", errorCode: "STEP_TRANSIENT" }));
    expect(leaked.text).not.toContain("password");
    expect(leaked.json).toEqual({
      status: "failed",
      kind: "transient",
      code: "STEP_TRANSIENT",
      message: "the run failed; the details are kept with the run on the server",
    });
    expect(leaked.status).toBe("failed");
    const chosen = await body(
      outcome({ status: "failed", result: undefined, error: secret, errorKind: "permanent", errorCode: "card_declined", publicError: "the card was declined" }),
    );
    expect(chosen.json).toEqual({ status: "failed", kind: "permanent", code: "card_declined", message: "the card was declined" });
    // A runner's own fail reason is text the application wrote to be seen.
    expect((await body(outcome({ status: "failed", result: undefined, error: "out of stock", errorKind: "runner" }))).json).toMatchObject({
      code: "RUN_FAILED",
      message: "out of stock",
    });
    expect((await body(outcome({ status: "cancelled", result: undefined, errorKind: "cancelled" }))).json).toEqual({
      status: "cancelled",
      kind: "cancelled",
      code: "RUN_CANCELLED",
      message: "the run was cancelled",
    });
    // Only an explicit option sends the raw text.
    const open = new WebhookTerminalHook({ queueName: "callbacks", exposeErrorText: true });
    expect((await body(outcome({ status: "failed", result: undefined, error: secret, errorKind: "transient" }), open)).json).toMatchObject({ message: secret });
  });

  it("StepError carries what the application exposes, and a code", () => {
    const e = StepError.permanent(new Error("db password=hunter2"), { publicMessage: "try again later", code: "busy" });
    expect([e.publicMessage, e.publicCode, e.kind]).toEqual(["try again later", "busy", "permanent"]);
    expect(StepError.transient(new InvalidWebhookRequestError(["x"])).publicCode).toBe("WEBHOOK_INVALID_REQUEST");
    expect(StepError.transient(new Error("x")).publicMessage).toBeUndefined();
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
