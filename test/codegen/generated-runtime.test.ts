/**
 * Run-time behaviour of generated code (the project's billing and media
 * packages): validators, the Standard Schema interface, the typed client's
 * validation before anything is submitted, signal keys and payloads, and the
 * worker-side checks `register` installs.
 *
 * The job runner is built later; a small in-test runner that records what it
 * is given stands in for it through the public `JobSubmitter`,
 * `SignalSender` and `JobRegistrar` interfaces.
 */

import { describe, expect, it } from "vitest";
import {
  JobFailure,
  ValidationError,
  type HeaderValues,
  type JobContext,
  type JobDefinition,
  type JobHandle,
  type JobHandler,
  type JobRegistrar,
  type JobSubmitOptions,
  type JobSubmitter,
  type SignalDelivery,
  type SignalSender,
  type Validator,
} from "taquba";
import { jsonSchemaFormats } from "taquba/generated";
import { billing, media } from "../../generated/index.js";

class RecordingRunner implements JobSubmitter, SignalSender, JobRegistrar {
  readonly submitted: Array<{ name: string; input: unknown; options: unknown }> = [];
  readonly signals: Array<{ key: string; payload: Uint8Array }> = [];
  readonly handlers = new Map<string, JobHandler<never, unknown, unknown, never>>();

  async submit<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    input: Input,
    options?: JobSubmitOptions<Headers>,
  ): Promise<JobHandle<Output, Err>> {
    this.submitted.push({ name: definition.name, input, options });
    return {
      jobId: `job-${this.submitted.length}`,
      newlySubmitted: true,
      result: () => Promise.reject(new Error("not run")),
      fetchResult: async () => null,
      output: () => Promise.reject(new Error("not run")),
    };
  }

  async signal(key: string, payload: Uint8Array): Promise<SignalDelivery> {
    this.signals.push({ key, payload });
    return "buffered";
  }

  register<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    handler: JobHandler<Input, Output, Err, Headers>,
  ): this {
    this.handlers.set(definition.name, handler as unknown as JobHandler<never, unknown, unknown, never>);
    return this;
  }

  /** Runs a registered handler the way a worker would, with `input` as decoded from the queue. */
  run(name: string, input: unknown, failed: unknown[] = []): Promise<unknown> {
    const handler = this.handlers.get(name) as unknown as JobHandler<unknown, unknown, unknown, HeaderValues>;
    const ctx: JobContext<HeaderValues, unknown> = {
      jobId: "j1",
      attempt: 1,
      maxAttempts: 3,
      headers: { tenant_id: "acme" },
      cancelSignal: new AbortController().signal,
      fail(error: unknown): never {
        failed.push(error);
        throw new JobFailure(error);
      },
    };
    return handler.run(input, ctx);
  }
}

const headers = { tenant_id: "acme" };
const email = { to: "a@b.co", subject: "Hello" };

describe("generated validators", () => {
  const input: Validator<billing.EmailSendInput> = billing.emailSendJob.input;

  it("accept valid values and report every violation by path", () => {
    expect(input.validate(email)).toEqual([]);
    expect(input.is(email)).toBe(true);
    const issues = input.validate({ to: "not-an-email", extra: 1 });
    expect(issues).toEqual(
      expect.arrayContaining([
        { path: "/subject", message: "is required" },
        { path: "/extra", message: "is not a declared property" },
        { path: "/to", message: 'must match format "email"' },
      ]),
    );
    expect(issues).toHaveLength(3);
  });

  it("assert throws a ValidationError listing each violation", () => {
    expect(() => input.assert({ to: 1, subject: "" })).toThrow(ValidationError);
    try {
      input.assert({ to: 1, subject: "" });
    } catch (e) {
      expect((e as ValidationError).code).toBe("VALIDATION");
      expect((e as ValidationError).issues).toEqual(["/to: must be string", "/subject: must NOT have fewer than 1 characters"]);
      expect((e as Error).message).toContain("invalid billing.email.send input");
    }
  });

  it("enum violations name the allowed values", () => {
    const issues = billing.invoiceRenderJob.output.validate({ object_key: "k", total: { amount_cents: 1, currency: "JPY" } });
    expect(issues).toEqual([{ path: "/total/currency", message: 'must be one of "EUR", "USD", "GBP"' }]);
  });

  it("speak Standard Schema v1", () => {
    const std = input["~standard"];
    expect(std.version).toBe(1);
    expect(std.vendor).toBe("taquba");
    expect(std.validate(email)).toEqual({ value: email });
    const bad = std.validate({ to: "a@b.co", subject: "x".repeat(201), cc: [] });
    expect(bad.issues).toEqual(
      expect.arrayContaining([
        { message: "must NOT have more than 200 characters", path: ["subject"] },
        { message: "is not a declared property", path: ["cc"] },
      ]),
    );
    const nested = billing.invoiceRenderJob.input["~standard"].validate({
      invoice_id: "i",
      lines: [{ sku: "s", quantity: 0, unit_price: { amount_cents: 1, currency: "EUR" } }],
    });
    expect(nested.issues).toEqual([{ message: "must be >= 1", path: ["lines", 0, "quantity"] }]);
  });

  it("count string length in code points and compare items structurally", () => {
    // One emoji is two UTF-16 code units but one character for minLength.
    expect(media.imageThumbnailJob.input.validate({ object_key: "😀", sizes: [64] })).toEqual([]);
    expect(media.imageThumbnailJob.input.validate({ object_key: "k", sizes: [64, 64] })).toEqual([
      { path: "/sizes", message: "must NOT have duplicate items (items ## 1 and 0 are identical)" },
    ]);
  });

  it("formats judge values the same way at run time as at generation time", () => {
    const cases: Array<[string, string, boolean]> = [
      ["date", "2024-02-29", true],
      ["date", "2023-02-29", false],
      ["date-time", "2024-01-01T10:00:00Z", true],
      ["date-time", "2024-01-01 10:00:00+01:00", true],
      ["date-time", "2024-01-01T25:00:00Z", false],
      ["time", "23:59:60.5Z", true],
      ["uri", "https://example.com/a?b=c", true],
      ["uri", "/relative/path", false],
      ["email", "a@b.co", true],
      ["email", "a@b", false],
      ["uuid", "123e4567-e89b-12d3-a456-426614174000", true],
      ["ipv4", "192.168.0.1", true],
      ["ipv4", "256.1.1.1", false],
      ["ipv6", "2001:db8::1", true],
      ["ipv6", "::ffff:192.0.2.1", true],
      ["ipv6", "1:2:3:4:5:6:7:8:9", false],
      ["hostname", "a-b.example.com", true],
      ["hostname", "-bad.example", false],
      ["duration", "P1DT2H", true],
      ["duration", "P", false],
      ["regex", "^a+$", true],
      ["regex", "(", false],
    ];
    for (const [format, value, ok] of cases) expect(jsonSchemaFormats[format]?.(value), `${format} ${value}`).toBe(ok);
  });
});

describe("generated client", () => {
  it("submits valid input with typed headers", async () => {
    const runner = new RecordingRunner();
    const handle = await billing.client(runner).emailSend.submit(email, { headers, priority: 3 });
    expect(handle.jobId).toBe("job-1");
    expect(runner.submitted).toEqual([{ name: "billing.email.send", input: email, options: { headers, priority: 3 } }]);
  });

  it("rejects invalid input, a missing required header or a malformed one, submitting nothing", async () => {
    const runner = new RecordingRunner();
    const c = billing.client(runner);
    await expect(c.emailSend.submit({ ...email, to: "nope" }, { headers })).rejects.toThrow(/\/to: must match format "email"/);
    await expect(c.emailSend.submit(email, { headers: {} as typeof headers })).rejects.toThrow(/\/tenant_id: is required/);
    await expect(c.emailSend.submit(email, { headers: { tenant_id: "Not Valid" } })).rejects.toThrow(ValidationError);
    await expect(c.emailSend.submit(email, { headers: { tenant_id: "acme", unknown: "x" } as typeof headers })).rejects.toThrow(
      /\/unknown: is not a declared property/,
    );
    expect(runner.submitted).toEqual([]);
  });

  it("needs no options when the package has no required headers", async () => {
    const runner = new RecordingRunner();
    await media.client(runner).imageScan.submit({ object_key: "k" });
    expect(runner.submitted).toHaveLength(1);
  });

  it("derives the idempotency key from the input, percent-encoding strings", () => {
    expect(billing.emailSendJob.idempotencyKey?.({ to: "a@b.co", subject: "Hi there" })).toBe("email:a%40b.co:Hi%20there");
    expect(billing.invoiceRenderJob.idempotencyKey).toBeTypeOf("function");
    expect(billing.emailSendJob.maxAttempts).toBe(5);
    expect(billing.invoiceRenderJob.priority).toBe(10);
    expect(billing.emailSendJob.contractHash).toMatch(/^[0-9a-f]{16}$/);
    expect(billing.emailSendJob.contractHash).not.toBe(billing.invoiceRenderJob.contractHash);
  });

  it("sends signals with the key built from typed parameters and a validated payload", async () => {
    const runner = new RecordingRunner();
    const payload = { amount: { amount_cents: 500, currency: "EUR" as const } };
    expect(await billing.client(runner).signals.paymentReceived({ order_id: "o:1" }, payload)).toBe("buffered");
    expect(runner.signals).toHaveLength(1);
    const sent = runner.signals[0] as { key: string; payload: Uint8Array };
    expect(sent.key).toBe("payment:o%3A1");
    expect(billing.paymentReceivedSignal.decode(sent.payload)).toEqual(payload);
  });

  it("rejects a bad signal payload or parameter, sending nothing; decode validates received bytes", async () => {
    const runner = new RecordingRunner();
    const c = billing.client(runner);
    await expect(c.signals.paymentReceived({ order_id: "o-1" }, { amount: { amount_cents: -1, currency: "EUR" } })).rejects.toThrow(
      /\/amount\/amount_cents: must be >= 0/,
    );
    await expect(c.signals.paymentReceived({ order_id: "" }, { amount: { amount_cents: 1, currency: "EUR" } })).rejects.toThrow(ValidationError);
    expect(runner.signals).toEqual([]);
    expect(() => billing.paymentReceivedSignal.decode(new TextEncoder().encode('{"amount":1}'))).toThrow(/\/amount: must be object/);
    expect(() => billing.paymentReceivedSignal.decode(new Uint8Array([0xff]))).toThrow(ValidationError);
  });

  it("fails clearly when the target cannot do what is asked", async () => {
    const onlySignals: SignalSender = { signal: async () => "delivered" };
    const c = billing.client(onlySignals as unknown as JobSubmitter);
    await expect(c.emailSend.submit(email, { headers })).rejects.toThrow(/without submit\(\)/);
  });
});

describe("generated register", () => {
  const output = { object_key: "invoices/i-1.pdf", total: { amount_cents: 100, currency: "EUR" as const } };

  function setUp(behaviour: { output?: unknown; fail?: unknown } = {}) {
    const runner = new RecordingRunner();
    const seen: unknown[] = [];
    billing.register(runner, {
      emailSend: {
        async run(input, ctx) {
          seen.push(input);
          if (behaviour.fail !== undefined) ctx.fail(behaviour.fail as billing.EmailSendError);
          return { message_id: "m-1" };
        },
      },
      invoiceRender: {
        async run(input) {
          seen.push(input);
          return (behaviour.output ?? output) as billing.InvoiceRenderOutput;
        },
      },
    });
    return { runner, seen };
  }

  it("registers every job and runs handlers on valid input", async () => {
    const { runner, seen } = setUp();
    expect([...runner.handlers.keys()].sort()).toEqual(["billing.email.send", "billing.invoice.render"]);
    await expect(runner.run("billing.email.send", email)).resolves.toEqual({ message_id: "m-1" });
    expect(seen).toEqual([email]);
  });

  it("validates input again on the worker side before the handler runs", async () => {
    const { runner, seen } = setUp();
    await expect(runner.run("billing.email.send", { to: "a@b.co" })).rejects.toThrow(/\/subject: is required/);
    expect(seen).toEqual([]);
  });

  it("validates the output before it is stored", async () => {
    const { runner } = setUp({ output: { object_key: "k" } });
    await expect(runner.run("billing.invoice.render", { invoice_id: "i", lines: [{ sku: "s", quantity: 1, unit_price: output.total }] })).rejects.toThrow(
      /invalid billing.invoice.render output[\s\S]*\/total: is required/,
    );
  });

  it("validates typed errors: a valid one reaches ctx.fail, an invalid one is a ValidationError", async () => {
    const failed: unknown[] = [];
    const ok = setUp({ fail: { reason: "bounced" } });
    await expect(ok.runner.run("billing.email.send", email, failed)).rejects.toThrow(JobFailure);
    expect(failed).toEqual([{ reason: "bounced" }]);
    const bad = setUp({ fail: { reason: "lost" } });
    const failed2: unknown[] = [];
    await expect(bad.runner.run("billing.email.send", email, failed2)).rejects.toThrow(/invalid billing.email.send error/);
    expect(failed2).toEqual([]);
  });
});
