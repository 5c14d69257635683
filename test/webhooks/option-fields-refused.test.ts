/**
 * @module The webhook layer's option objects refuse a field that is none
 * of theirs, naming it, before anything is enqueued, delivered or claimed:
 * a misspelt `timeoutMS` or `tolerance` would otherwise leave its default
 * in force without a word.
 */
import { describe, expect, it } from "vitest";
import {
  InvalidWebhookRequestError,
  MemoryStore,
  Queue,
  WebhookTerminalHook,
  WebhookWorker,
  runWebhookWorker,
  verifyWebhook,
  webhookEnqueueRequest,
} from "taquba";
import { refusal } from "../support/refusal.js";

// The example of the Standard Webhooks specification: a secret, a message and its signature.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const HEADERS = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const BODY = '{"test": 2432232314}';
const AT = 1614265330 * 1000;

describe("webhook option fields", () => {
  it("verifyWebhook refuses a misspelt option, and verifies with it spelt right", () => {
    expect(() => verifyWebhook(SECRET, HEADERS, BODY, { now: AT, tolerance: 1 } as never)).toThrow(/VerifyWebhookOptions\.tolerance is not an option/);
    expect(verifyWebhook(SECRET, HEADERS, BODY, { now: AT, toleranceMs: 1_000 }).id).toBe(HEADERS["webhook-id"]);
  });

  it("webhookEnqueueRequest refuses a misspelt option as an invalid request", () => {
    let caught: unknown;
    try {
      webhookEnqueueRequest("hooks", { url: "https://x.test/" }, { dedupkey: "once" } as never);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(InvalidWebhookRequestError);
    expect((caught as Error).message).toMatch(/WebhookEnqueueOptions\.dedupkey is not an option.*did you mean dedupKey\?/);
    expect(webhookEnqueueRequest("hooks", { url: "https://x.test/" }, { dedupKey: "once" }).options.dedupKey).toBe("once");
  });

  it("WebhookTerminalHook and WebhookWorker refuse a misspelt option", async () => {
    expect((await refusal(() => new WebhookTerminalHook({ queueName: "callbacks", timeoutMS: 5 } as never))).message).toMatch(
      /WebhookTerminalHookOptions\.timeoutMS is not an option.*did you mean timeoutMs\?/,
    );
    expect((await refusal(() => new WebhookWorker({ secert: SECRET } as never))).message).toMatch(
      /WebhookWorkerOptions\.secert is not an option.*did you mean secret\?/,
    );
    expect(new WebhookTerminalHook({ queueName: "callbacks", timeoutMs: 5 })).toBeInstanceOf(WebhookTerminalHook);
    expect(new WebhookWorker({ secret: SECRET })).toBeInstanceOf(WebhookWorker);
  });

  it("runWebhookWorker refuses a misspelt option and claims nothing", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      const err = await refusal(() => runWebhookWorker(queue, "hooks", { concurency: 2 } as never));
      expect(err.message).toMatch(/RunWebhookWorkerOptions\.concurency is not an option.*did you mean concurrency\?/);
    } finally {
      await queue.close();
    }
  });
});
