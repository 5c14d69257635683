/**
 * @module The next step's job is staged without its strings checked again
 * (`stageRebuiltEnqueue`): every string it copies must already pass the
 * checks the public enqueue makes. A run with headers at the run's limits
 * (64 headers, near 32 KiB, names with odd characters: spaces, emoji,
 * `constructor`, `toString`, a dotted name that is not reserved) continues
 * past step 9 and 99 (the step header grows), after a delay and on a
 * signal whose key is 512 bytes of multi-byte text; each step job, read
 * back from the queue, must be one `SettlementEffects.enqueue` accepts with
 * the same headers, job id and dedup key, carrying the run's headers
 * unchanged. Headers past the run's limits, an odd name and a long run id
 * are refused at submission, nothing written.
 */
import { describe, expect, it } from "vitest";
import {
  MAX_RUN_HEADERS,
  MAX_RUN_HEADERS_BYTES,
  ReservedHeaderError,
  SettlementEffects,
  StepOutcome,
  ValidationError,
  withCounting,
  MemoryStore,
  type Queue,
} from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

/** 64 headers with odd names whose names and values come to just under the run's byte limit. */
function headersAtTheLimit(): Record<string, string> {
  const names = ["constructor", "toString", "hasOwnProperty", "a b", "\u{1f600}", "workflow", "workflowx.step", "x".repeat(256), "é中", "valueOf"];
  for (let i = names.length; i < MAX_RUN_HEADERS; i++) names.push(`h-${i}`);
  const headers: Record<string, string> = {};
  const nameBytes = names.reduce((n, k) => n + Buffer.byteLength(k), 0);
  // The values share what the names leave of the limit, less a little.
  const each = Math.floor((MAX_RUN_HEADERS_BYTES - nameBytes - 64) / names.length);
  for (const [i, k] of names.entries()) headers[k] = i % 3 === 0 ? "ü".repeat(Math.floor(each / 2)) : "v".repeat(each);
  return headers;
}

const LAST_STEP = 101;
const SIGNAL_STEP = 50;
const KEY = `${"中".repeat(170)}ab`; // 512 bytes of UTF-8

describe("the next step's job, staged without checking its strings again", () => {
  it("carries headers at the run's limits through 100 steps, a delay and a signal, each step job one the public enqueue accepts", {
    timeout: 120_000,
  }, async () => {
    const given = headersAtTheLimit();
    expect(Buffer.byteLength(KEY)).toBe(512);
    const problems: string[] = [];
    const signals: string[] = [];
    let queueRef: Queue | undefined;
    const env = await openEnv(
      runnerOf(async (s) => {
        const job = await queueRef!.view().job(s.jobId);
        if (job === null) problems.push(`step ${s.stepNumber}: its job ${s.jobId} is not in the queue`);
        else {
          try {
            new SettlementEffects().enqueue("workflow-steps", s.payload, {
              headers: job.headers,
              jobId: s.jobId,
              dedupKey: `${s.runId}:${s.stepNumber}`,
              priority: job.priority,
              maxAttempts: job.maxAttempts,
            });
          } catch (e) {
            problems.push(`step ${s.stepNumber}: the public enqueue refuses its job: ${(e as Error).message}`);
          }
          for (const [k, v] of Object.entries(given)) if (job.headers[k] !== v) problems.push(`step ${s.stepNumber}: header ${k.slice(0, 20)} changed`);
          if (job.headers["workflow.step"] !== String(s.stepNumber)) problems.push(`step ${s.stepNumber}: step header ${job.headers["workflow.step"]}`);
        }
        for (const [k, v] of Object.entries(given))
          if (s.headers[k] !== v) problems.push(`step ${s.stepNumber}: the step sees header ${k.slice(0, 20)} changed`);
        if (s.stepNumber === SIGNAL_STEP) signals.push(dec(s.signal ?? null));
        if (s.stepNumber === LAST_STEP) return StepOutcome.succeed(enc("done"));
        if (s.stepNumber === SIGNAL_STEP - 1) return StepOutcome.continueOnSignal(s.payload, KEY, 3_600_000);
        if (s.stepNumber === 10) return StepOutcome.continueAfter(s.payload, 1000);
        return StepOutcome.continueNow(s.payload);
      }),
    );
    queueRef = env.queue;
    try {
      const { runId } = await env.runtime.submit({ input: enc("go"), options: { headers: given, priority: 7, maxAttemptsPerStep: 2 } });
      await until(async () => (await env.queue.view().stats("workflow-steps")).scheduled > 0, "the delayed step scheduled", 60_000);
      env.clock.advance(1000);
      // Buffered until step 49 registers its wait, or delivered to the waiting step: the key goes into its next job's headers either way.
      await env.runtime.signal(KEY, enc("sig"));
      const outcome = (await env.runtime.wait(runId)).outcome!;
      expect(problems).toEqual([]);
      expect(outcome.status).toBe("succeeded");
      expect(outcome.finalStep).toBe(LAST_STEP);
      expect(outcome.headers).toEqual(given);
      expect(dec(outcome.result)).toBe("done");
      expect(signals).toEqual(["sig"]);
    } finally {
      await env.stop();
    }
  });

  it("refuses at submission what the next step would copy unchecked: headers past the run's limits, a lone surrogate, __proto__, a reserved name; nothing written", async () => {
    const store = withCounting(new MemoryStore());
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { store },
    );
    try {
      store.reset();
      const over = { ...headersAtTheLimit(), extra: "x".repeat(200) };
      const tooMany = Object.fromEntries(Array.from({ length: MAX_RUN_HEADERS + 1 }, (_, i) => [`h${i}`, "v"]));
      const cases: [string, Record<string, string>][] = [
        ["past the byte limit", over],
        ["one header too many", tooMany],
        ["a lone surrogate in a name", { "a\ud800": "v" }],
        ["a lone surrogate in a value", { a: "\udc00" }],
        ["a parsed __proto__", JSON.parse('{"__proto__": "v"}') as Record<string, string>],
        ["a reserved name", { "workflow.step": "5" }],
        ["an empty name", { "": "v" }],
      ];
      for (const [what, headers] of cases) {
        const err = await env.runtime.submit({ input: enc("x"), options: { headers } }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err instanceof ValidationError || err instanceof ReservedHeaderError, `${what}: ${String(err)}`).toBe(true);
      }
      expect(store.counts.puts).toBe(0);
    } finally {
      await env.stop();
    }
  });
});
