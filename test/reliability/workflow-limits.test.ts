/**
 * @module Bad input at the workflow boundary: headers, signal keys, signal
 * payloads, memo keys and values, run inputs and run-group keys are checked
 * where the caller passes them, against documented limits (docs/limits.md),
 * at each boundary. Errors name the caller's header, signal or memo key,
 * never an internal record key, and nothing durable changes. A header named
 * `__proto__` is refused on runs and on raw queues, never dropped or renamed.
 */
import { describe, expect, it } from "vitest";
import { MAX_HEADERS, MAX_HEADER_NAME_BYTES, MAX_HEADERS_BYTES, MAX_KV_VALUE_SIZE, Memo, MemoryStore, StepOutcome, Trigger, ValidationError } from "taquba";
import {
  checkGroupSize,
  checkRunPayload,
  MAX_GROUP_INPUT_BYTES,
  MAX_GROUP_MEMBERS,
  MAX_CORRELATION_KEY_BYTES,
  MAX_GROUP_KEY_BYTES,
  MAX_MEMO_KEY_BYTES,
  MAX_MEMO_VALUE_BYTES,
  MAX_RUN_HEADERS,
  MAX_RUN_HEADERS_BYTES,
  MAX_RUN_PAYLOAD_BYTES,
  MAX_SIGNAL_PAYLOAD_BYTES,
} from "../../runtime/workflow/limits.js";
import { dec, enc, openEnv, runnerOf, until } from "../workflow/helpers.js";

/** Asserts `p` rejects with a ValidationError whose message contains `mentions` and names no internal key. */
async function refused(p: Promise<unknown> | (() => unknown), mentions: string): Promise<ValidationError> {
  let err: unknown;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err, "expected a ValidationError").toBeInstanceOf(ValidationError);
  const message = (err as Error).message;
  expect(message).toContain(mentions);
  expect(message).not.toMatch(/workflow\/(runs|signal-wait|signal-buf|steps|groups)\//);
  expect(message.length).toBeLessThan(600);
  return err as ValidationError;
}

const headersOf = (n: number, valueBytes = 1): Record<string, string> =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`h${i}`, "v".repeat(valueBytes)]));

describe("headers of runs", () => {
  it("refuses a header named __proto__ with a clear error and records nothing", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    const headers = JSON.parse('{"__proto__":"x","tenant":"t"}') as Record<string, string>;
    await refused(env.runtime.submit({ input: enc("i"), runId: "r", options: { headers } }), '"__proto__"');
    expect(await env.runtime.status("r")).toBeNull();
    await env.stop();
  });

  it("refuses a 1 MB header value naming the header, not the run record", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    await refused(env.runtime.submit({ input: enc("i"), runId: "r", options: { headers: { big: "x".repeat(1024 * 1024) } } }), '"big"');
    expect(await env.runtime.status("r")).toBeNull();
    await env.stop();
  });

  it(`takes ${MAX_RUN_HEADERS} headers and ${MAX_RUN_HEADERS_BYTES} bytes of them; refuses one more of either`, async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(enc(Object.keys(s.headers).length.toString()))));
    const full = headersOf(MAX_RUN_HEADERS);
    const end = await env.runtime.submit({ input: enc("i"), runId: "count-ok", options: { headers: full } }).then(() => env.runtime.wait("count-ok"));
    expect(dec(end.outcome!.result)).toBe(String(MAX_RUN_HEADERS));
    await refused(
      env.runtime.submit({ input: enc("i"), runId: "count-over", options: { headers: headersOf(MAX_RUN_HEADERS + 1) } }),
      `at most ${MAX_RUN_HEADERS}`,
    );
    // One header whose name and value take exactly the byte budget.
    const exact = { a: "v".repeat(MAX_RUN_HEADERS_BYTES - 1) };
    await env.runtime.submit({ input: enc("i"), runId: "bytes-ok", options: { headers: exact } });
    expect((await env.runtime.wait("bytes-ok")).termination.status).toBe("succeeded");
    await refused(env.runtime.submit({ input: enc("i"), runId: "bytes-over", options: { headers: { a: "v".repeat(MAX_RUN_HEADERS_BYTES) } } }), '"a"');
    expect(await env.runtime.status("count-over")).toBeNull();
    expect(await env.runtime.status("bytes-over")).toBeNull();
    await env.stop();
  });

  it(`takes header names of ${MAX_HEADER_NAME_BYTES} bytes and refuses longer ones`, async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    await env.runtime.submit({ input: enc("i"), runId: "ok", options: { headers: { ["n".repeat(MAX_HEADER_NAME_BYTES)]: "v" } } });
    expect((await env.runtime.wait("ok")).termination.status).toBe("succeeded");
    await refused(env.runtime.submit({ input: enc("i"), runId: "over", options: { headers: { ["n".repeat(MAX_HEADER_NAME_BYTES + 1)]: "v" } } }), "name");
    await env.stop();
  });
});

describe("headers of raw queue jobs", () => {
  it("refuses __proto__ instead of storing it renamed", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    const headers = JSON.parse('{"__proto__":"x"}') as Record<string, string>;
    await refused(env.queue.enqueue("raw", enc("p"), { headers }), '"__proto__"');
    expect((await env.queue.view().stats("raw")).pending).toBe(0);
    await env.stop();
  });

  it(`takes ${MAX_HEADERS} headers, names of ${MAX_HEADER_NAME_BYTES} bytes and ${MAX_HEADERS_BYTES} bytes in all; refuses one more of each`, async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    await env.queue.enqueue("raw", enc("p"), { headers: headersOf(MAX_HEADERS) });
    await refused(env.queue.enqueue("raw", enc("p"), { headers: headersOf(MAX_HEADERS + 1) }), `at most ${MAX_HEADERS}`);
    await env.queue.enqueue("raw", enc("p"), { headers: { ["n".repeat(MAX_HEADER_NAME_BYTES)]: "v" } });
    // A 32 MiB name is refused without echoing it.
    await refused(env.queue.enqueue("raw", enc("p"), { headers: { ["n".repeat(32 * 1024 * 1024)]: "v" } }), "name");
    await env.queue.enqueue("raw", enc("p"), { headers: { a: "v".repeat(MAX_HEADERS_BYTES - 1) } });
    await refused(env.queue.enqueue("raw", enc("p"), { headers: { a: "v".repeat(MAX_HEADERS_BYTES) } }), '"a"');
    // 100,000 headers get the count error, not a failure inside the encoder.
    await refused(env.queue.enqueue("raw", enc("p"), { headers: headersOf(100_000) }), `at most ${MAX_HEADERS}`);
    expect((await env.queue.view().stats("raw")).pending).toBe(3);
    const claimed = await env.queue.claimBatch("raw", 3);
    expect(claimed.map((j) => Object.keys(j.headers).length).sort((a, b) => a - b)).toEqual([1, 1, MAX_HEADERS]);
    await env.stop();
  });
});

describe("signals", () => {
  it("refuses a correlation key over the limit naming the signal key; takes one at the limit", async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    await refused(env.runtime.signal("k".repeat(1000), enc("p")), "signal correlation key");
    await refused(env.runtime.clearSignal("k".repeat(MAX_CORRELATION_KEY_BYTES + 1)), "signal correlation key");
    expect(await env.runtime.signal("k".repeat(MAX_CORRELATION_KEY_BYTES), enc("p"))).toBe("buffered");
    expect(await env.runtime.clearSignal("k".repeat(MAX_CORRELATION_KEY_BYTES))).toBe(true);
    expect(() => Trigger.onSignal("k".repeat(MAX_CORRELATION_KEY_BYTES + 1), 1000)).toThrow(`at most ${MAX_CORRELATION_KEY_BYTES} bytes`);
    await env.stop();
  });

  it("gives the same answer to an oversized payload whether or not a run waits, and takes one at the limit either way", async () => {
    const runner = runnerOf(async (s) =>
      s.stepNumber === 0 ? StepOutcome.continueOnSignal(enc("w"), `key-${dec(s.payload)}`, 3_600_000) : StepOutcome.succeed(enc(String(s.signal?.byteLength))),
    );
    const env = await openEnv(runner);
    const over = new Uint8Array(MAX_SIGNAL_PAYLOAD_BYTES + 1);
    const atLimit = new Uint8Array(MAX_SIGNAL_PAYLOAD_BYTES);
    expect(MAX_SIGNAL_PAYLOAD_BYTES).toBe(MAX_KV_VALUE_SIZE);
    // No waiter: refused, nothing buffered.
    await refused(env.runtime.signal("key-a", over), '"key-a"');
    expect(await env.runtime.clearSignal("key-a")).toBe(false);
    // A waiter: refused the same way, and the run still waits.
    await env.runtime.submit({ input: enc("a"), runId: "ra" });
    // The delivery below needs the run to wait already: a bounded loop that went on regardless buffered it instead.
    await until(async () => (await env.queue.kvScan("workflow/signal-wait/")).entries.length > 0, "the run waiting for its signal");
    await refused(env.runtime.signal("key-a", over), '"key-a"');
    expect((await env.runtime.status("ra"))?.state).toBe("pending");
    // At the limit: delivered to the waiter, and buffered when none waits.
    expect(await env.runtime.signal("key-a", atLimit)).toBe("delivered");
    expect(dec((await env.runtime.wait("ra")).outcome!.result)).toBe(String(MAX_SIGNAL_PAYLOAD_BYTES));
    expect(await env.runtime.signal("key-b", atLimit)).toBe("buffered");
    await env.stop();
  });
});

describe("memo keys and values", () => {
  it("refuses a memo key or value over the limit naming the memo key; takes them at the limit", async () => {
    const memo = new Memo(new MemoryStore(), "m", "run-1", 0);
    await refused(memo.put("k".repeat(MAX_MEMO_KEY_BYTES + 1), enc("v")), "memo key");
    await refused(memo.get("k".repeat(MAX_MEMO_KEY_BYTES + 1)), "memo key");
    await refused(
      memo.memoized("k".repeat(MAX_MEMO_KEY_BYTES + 1), async () => 1),
      "memo key",
    );
    await memo.put("k".repeat(MAX_MEMO_KEY_BYTES), enc("v"));
    expect(dec(await memo.get("k".repeat(MAX_MEMO_KEY_BYTES)))).toBe("v");
    await memo.put("big", new Uint8Array(MAX_MEMO_VALUE_BYTES));
    await refused(memo.put("bigger", new Uint8Array(MAX_MEMO_VALUE_BYTES + 1)), '"bigger"');
    expect(await memo.get("bigger")).toBeNull();
    await refused(
      memo.memoized("huge", async () => new Uint8Array(MAX_MEMO_VALUE_BYTES + 16)),
      '"huge"',
    );
  });
});

describe("run inputs and run groups", () => {
  it(`refuses a run input over ${MAX_RUN_PAYLOAD_BYTES} bytes naming the run, and takes one at the limit`, async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    await refused(env.runtime.submit({ input: new Uint8Array(MAX_RUN_PAYLOAD_BYTES + 1), runId: "huge" }), '"huge"');
    expect(await env.runtime.status("huge")).toBeNull();
    expect(() => checkRunPayload("x", new Uint8Array(MAX_RUN_PAYLOAD_BYTES))).not.toThrow();
    await env.stop();
  });

  it("fails the step permanently when a runner continues with a signal key over the limit", async () => {
    const key = "k".repeat(MAX_CORRELATION_KEY_BYTES + 1);
    const env = await openEnv(
      runnerOf(async () => ({ kind: "continue", payload: enc("p"), when: { kind: "onSignal", correlationKey: key, timeoutMs: 1000 } }) as StepOutcome),
    );
    await env.runtime.submit({ input: enc("i"), runId: "r" });
    const end = await env.runtime.wait("r");
    expect(end.termination.status).toBe("failed");
    expect(end.termination.errorKind).toBe("permanent");
    expect(end.termination.error).toContain("signal correlation key");
    await env.stop();
  });

  it(`takes run-group member keys of ${MAX_GROUP_KEY_BYTES} bytes and refuses longer ones`, async () => {
    const env = await openEnv(runnerOf(async (s) => StepOutcome.succeed(s.payload)));
    const group = env.runtime.group("g");
    await group.submit([{ key: "k".repeat(MAX_GROUP_KEY_BYTES), input: enc("i") }]);
    await refused(group.submit([{ key: "k".repeat(MAX_GROUP_KEY_BYTES + 1), input: enc("i") }]), "member key");
    await env.stop();
  });

  it(`holds ${MAX_GROUP_MEMBERS} members and ${MAX_GROUP_INPUT_BYTES} bytes of inputs per group; refuses more before writing anything`, async () => {
    const one = (n: number) => ({ input: new Uint8Array(n) });
    expect(() =>
      checkGroupSize(
        "g",
        Array.from({ length: MAX_GROUP_MEMBERS - 1 }, () => one(0)),
        [one(0)],
      ),
    ).not.toThrow();
    expect(() =>
      checkGroupSize(
        "g",
        Array.from({ length: MAX_GROUP_MEMBERS }, () => one(0)),
        [one(0)],
      ),
    ).toThrow(`at most ${MAX_GROUP_MEMBERS}`);
    expect(() => checkGroupSize("g", [one(MAX_GROUP_INPUT_BYTES - 1)], [one(1)])).not.toThrow();
    expect(() => checkGroupSize("g", [one(MAX_GROUP_INPUT_BYTES)], [one(1)])).toThrow(`at most ${MAX_GROUP_INPUT_BYTES} bytes`);
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    const group = env.runtime.group("big");
    const members = Array.from({ length: MAX_GROUP_MEMBERS + 1 }, (_, i) => ({ key: `m${i}`, input: enc("i") }));
    await refused(group.submit(members), `at most ${MAX_GROUP_MEMBERS}`);
    expect((await env.queue.view().stats("workflow-steps")).pending).toBe(0);
    await env.stop();
  });
});
