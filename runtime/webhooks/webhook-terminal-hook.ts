/**
 * @module `WebhookTerminalHook`: tells a run's submitter over HTTP that the
 * run ended.
 *
 * The runtime hands each termination to the hook inside the job that
 * carries the notification; the hook stages a webhook delivery job into the
 * notification's effects, so the delivery is created exactly once, in the
 * commit that acknowledges the notification. The HTTP request itself is then
 * made (and retried) by a webhook worker on `queueName`.
 *
 * The target is the run's `callback_url` header (set on
 * `RunSpec.options.headers`). Runs without it produce no notification job
 * at all.
 */

import { activeTraceHeader } from "../telemetry/tracing.js";
import { StepError } from "../workflow/workflow-errors.js";
import type { TerminalEffects } from "../workflow/steps/effects-handle.js";
import type { RunOutcome } from "../workflow/runs/run-types.js";
import type { TerminalHook } from "../workflow/terminal-hook/terminal-hook.js";
import { webhookEnqueueRequest } from "./webhook-request.js";
import { validatePositiveInt, validateQueueName } from "../queue/names.js";
import { ValidationError } from "../errors.js";
import { checkOptionalString, describeValue, errorText, isOptionObject, optionFields, readExactOptions, readOptions } from "../option-values.js";

/** Run header holding the callback URL. */
export const CALLBACK_URL_HEADER = "callback_url";
/** Outgoing header carrying the run id. */
export const RUN_ID_HTTP_HEADER = "Workflow-Run-Id";
/** Outgoing header carrying `succeeded`, `failed` or `cancelled`. */
export const RUN_STATUS_HTTP_HEADER = "Workflow-Run-Status";

/** Options of {@link WebhookTerminalHook}. */
export interface WebhookTerminalHookOptions {
  /** The queue a webhook worker serves; the delivery jobs go there. Required. */
  queueName: string;
  /** Extra outgoing HTTP headers on every callback, e.g. an API key for the receiver. Default: none. */
  headers?: Readonly<Record<string, string>>;
  /** Request timeout of each callback. Default: the webhook worker's. */
  timeoutMs?: number;
  /** Delivery attempts before a callback is dead-lettered. Default: the queue's. */
  maxAttempts?: number;
  /**
   * Send the raw error text of a failed run as its message. It often holds
   * internal detail (hosts, credentials in connection strings, stack
   * frames), so turn this on only when every receiver is trusted. Default:
   * false: the message is what the application exposed through
   * `StepError.permanent(err, { publicMessage })`, or the runner's own
   * `fail`/`cancel` reason, else a generic sentence.
   */
  exposeErrorText?: boolean;
}

/** The body of a callback for a run that did not succeed. */
export interface RunFailureNotice {
  readonly status: "failed" | "cancelled";
  /** Why it ended (see `RunErrorKind`); absent when the record does not say. */
  readonly kind?: RunOutcome["errorKind"];
  /** A stable code: the step error's public code, or RUN_FAILED / RUN_CANCELLED. */
  readonly code: string;
  /** Text the application chose to expose; never the raw error unless `exposeErrorText` is set. */
  readonly message: string;
}

/** The notice a receiver gets for a failed or cancelled run; pure. */
export function runFailureNotice(given: RunOutcome, exposeErrorText = false): RunFailureNotice {
  // Read once: a getter or Proxy that throws is refused by name, never a TypeError.
  const outcome = readOptions(given, ["status", "errorKind", "error", "publicError", "errorCode"], "outcome", "a run outcome") as Partial<RunOutcome>;
  for (const k of ["error", "publicError", "errorCode"] as const) checkOptionalString(`outcome.${k}`, outcome[k]);
  const status = outcome.status === "cancelled" ? "cancelled" : "failed";
  // A runner's fail/cancel reason is text the application wrote for this purpose.
  const chosen = outcome.errorKind === "runner" ? outcome.error : outcome.publicError;
  const message =
    (exposeErrorText ? outcome.error : undefined) ??
    chosen ??
    (status === "cancelled" ? "the run was cancelled" : "the run failed; the details are kept with the run on the server");
  return {
    status,
    ...(outcome.errorKind === undefined ? {} : { kind: outcome.errorKind }),
    code: outcome.errorCode ?? (status === "cancelled" ? "RUN_CANCELLED" : "RUN_FAILED"),
    message,
  };
}

/**
 * A terminal hook that POSTs each run's termination to the run's
 * `callback_url` header. The body is the result bytes when the run
 * succeeded, else a JSON {@link RunFailureNotice} (status, kind, code and a
 * message the application chose to expose, never the raw error text unless
 * `exposeErrorText` is set); the headers `Workflow-Run-Id` and
 * `Workflow-Run-Status` say which run and how it ended. Deliveries are
 * signed and their addresses checked by the webhook worker that sends them.
 *
 * A `callback_url` that is not a valid http(s) URL dead-letters the
 * notification, with a message naming the problem, rather than retrying it.
 *
 * @example
 * const hook = new WebhookTerminalHook({ queueName: "callbacks" });
 * const runtime = WorkflowRuntime.builder(queue, store, runner, hook).build();
 * // elsewhere: runWebhookWorker(queue, "callbacks", { secret, signal });
 * await runtime.submit({ input, options: { headers: { callback_url: "https://example.com/done" } } });
 */
const HOOK_KEYS = optionFields<WebhookTerminalHookOptions>({ queueName: true, headers: true, timeoutMs: true, maxAttempts: true, exposeErrorText: true });

export class WebhookTerminalHook implements TerminalHook {
  readonly #opts: WebhookTerminalHookOptions;

  /** Throws `InvalidWebhookRequestError` when the static headers or timeout are unusable. */
  constructor(given: WebhookTerminalHookOptions) {
    // Each field read once (see readOptions), the static headers copied: what is checked here is what every notification uses.
    const opts = readExactOptions(given, HOOK_KEYS, "WebhookTerminalHookOptions") as WebhookTerminalHookOptions;
    // Checked here, not first at a run's end: the queue the deliveries go to.
    if (typeof opts.queueName !== "string")
      throw new ValidationError(
        `WebhookTerminalHookOptions.queueName must be the name of the queue a webhook worker serves, got ${describeValue(opts.queueName)}`,
      );
    validateQueueName(opts.queueName);
    if (opts.maxAttempts !== undefined) validatePositiveInt("WebhookTerminalHookOptions.maxAttempts", opts.maxAttempts);
    // Exactly a boolean: a string such as "false" is truthy and would send internal error text to receivers.
    if (opts.exposeErrorText !== undefined && typeof opts.exposeErrorText !== "boolean")
      throw new ValidationError(`WebhookTerminalHookOptions.exposeErrorText must be true or false, got ${describeValue(opts.exposeErrorText)}`);
    if (opts.headers !== undefined && !isOptionObject(opts.headers))
      throw new ValidationError(`WebhookTerminalHookOptions.headers must be an object of header names to values, got ${describeValue(opts.headers)}`);
    let headers: Record<string, string>;
    try {
      headers = { ...opts.headers };
    } catch (err) {
      // A header getter or Proxy that throws is refused by name, as a top-level field's is (readOptions).
      throw new ValidationError(`WebhookTerminalHookOptions.headers could not be read: ${errorText(err)}`);
    }
    this.#opts = { ...opts, headers };
    // Checked once here, so a bad option fails at startup rather than on every termination.
    this.#build("https://example.com/", "00000000000000000000000000", "succeeded", new Uint8Array());
  }

  /** Only runs with a `callback_url` header get a notification. */
  observes(outcome: RunOutcome): boolean {
    const url = outcome.headers[CALLBACK_URL_HEADER];
    return url !== undefined && url !== "";
  }

  async onTermination(outcome: RunOutcome, effects: TerminalEffects): Promise<void> {
    const url = outcome.headers[CALLBACK_URL_HEADER];
    if (url === undefined || url === "") return;
    const body =
      outcome.status === "succeeded"
        ? (outcome.result ?? new Uint8Array())
        : new TextEncoder().encode(JSON.stringify(runFailureNotice(outcome, this.#opts.exposeErrorText ?? false)));
    let delivery;
    try {
      delivery = this.#build(url, outcome.runId, outcome.status, body);
    } catch (err) {
      // A bad URL will not get better on a retry.
      throw StepError.permanent(err);
    }
    effects.enqueue(delivery.queueName, delivery.payload, delivery.options);
  }

  #build(url: string, runId: string, status: RunOutcome["status"], body: Uint8Array) {
    return webhookEnqueueRequest(
      this.#opts.queueName,
      {
        url,
        method: "POST",
        headers: {
          ...(Object.keys(this.#opts.headers ?? {}).some((k) => k.toLowerCase() === "content-type")
            ? {}
            : { "Content-Type": status === "succeeded" ? "application/octet-stream" : "application/json" }),
          ...this.#opts.headers,
          [RUN_ID_HTTP_HEADER]: runId,
          [RUN_STATUS_HTTP_HEADER]: status,
        },
        ...(this.#opts.timeoutMs === undefined ? {} : { timeoutMs: this.#opts.timeoutMs }),
        body,
      },
      // The run's trace travels to the delivery job, whose span joins it.
      { headers: activeTraceHeader(), ...(this.#opts.maxAttempts === undefined ? {} : { maxAttempts: this.#opts.maxAttempts }) },
    );
  }
}
