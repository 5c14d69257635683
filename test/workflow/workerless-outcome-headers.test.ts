/**
 * @module The headers of a run that ended without a worker (a debounce
 * replacing it, dead-step reconciliation, a cancel of its pending step) are
 * kept whole in its outcome: up to the inline bound in its terminal
 * record, past it in a run result record written before the end. `wait`,
 * `outcome()` in this process and another, the operator's run detail and
 * the terminal hook all report the same headers, at the bound and one byte
 * past it. Before, one byte past it the outcome reported no headers while
 * the hook was given them.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, QueueReader, WorkflowView, type PutOptions } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { readRunDetail } from "../../operator/inspect/run-detail.js";
import { encodeInlineOutcome } from "../../runtime/workflow/records/records.js";
import { INLINE_OUTCOME_MAX_BYTES } from "../../runtime/workflow/runs/inline-outcome.js";
import { advanceUntil, enc, type Env, hangingRunner, headersAtAndOverInline, openEnv, recordingHook } from "./helpers.js";

const STEPS = "workflow-steps";

/** Every reader's headers for the ended run `runId`: wait, outcome(), another process's view, the operator's run detail. */
async function headersSeen(env: Env, store: MemoryStore, runId: string): Promise<Record<string, string>[]> {
  const reader = await QueueReader.open(store, "wf");
  try {
    const view = new WorkflowView(reader, new MemoStore(store, "workflow-steps-memo"));
    const detail = await readRunDetail(view, reader, runId);
    return [
      (await env.runtime.wait(runId)).outcome!.headers,
      (await env.runtime.outcome(runId))!.headers,
      (await view.outcome(runId))!.headers,
      detail!.headers,
    ];
  } finally {
    await reader.close();
  }
}

// One-byte characters: the bound exactly, and one byte past it.
const { at, over } = headersAtAndOverInline("a");

describe("headers of an end without a worker, at the inline bound and one byte past", () => {
  it("the sizes straddle the bound", () => {
    expect(encodeInlineOutcome({ headers: at }).byteLength).toBe(INLINE_OUTCOME_MAX_BYTES);
    expect(encodeInlineOutcome({ headers: over }).byteLength).toBe(INLINE_OUTCOME_MAX_BYTES + 1);
  });

  for (const [size, headers] of [
    ["at the bound", at],
    ["one byte past", over],
  ] as const) {
    it(`a debounce's replaced run (${size}): every reader and the hook report the headers`, async () => {
      const store = new MemoryStore();
      const hook = recordingHook();
      const env = await openEnv(hangingRunner(new Promise(() => {})), { store, hook, start: false });
      try {
        const debounce = { key: "report", periodMs: 60_000 };
        await env.runtime.submit({ runId: "first", input: enc("a"), options: { headers, debounce } });
        await env.runtime.submit({ runId: "second", input: enc("b"), options: { debounce } });
        expect(await env.runtime.status("first")).toMatchObject({ state: "terminated", status: "cancelled", errorKind: "superseded" });
        for (const h of await headersSeen(env, store, "first")) expect(h).toEqual(headers);
        expect((await env.runtime.outcome("first"))?.supersededBy).toBe("second");
        await env.runtime.cancel("second");
        const worker = env.runtime.spawn();
        await advanceUntil(env.clock, env.clock.now() + 1_000, async () => hook.seen.length === 2, "the notifications");
        await worker.shutdown();
        expect(hook.seen.find((o) => o.runId === "first")?.headers).toEqual(headers);
      } finally {
        await env.stop();
      }
    });

    it(`dead-step reconciliation (${size}): every reader and the hook report the headers`, async () => {
      const store = new MemoryStore();
      const hook = recordingHook();
      let release!: () => void;
      const runner = hangingRunner(new Promise<void>((r) => (release = r)));
      const env = await openEnv(runner, { store, hook, queueOptions: { queueConfigs: { [STEPS]: { leaseMs: 1_000, maxAttempts: 1 } } } });
      try {
        await env.runtime.submit({ runId: "reaped", input: enc("a"), options: { headers } });
        await advanceUntil(env.clock, env.clock.now() + 60_000, async () => (await env.runtime.status("reaped"))?.state === "terminated", "the end");
        expect(await env.runtime.status("reaped")).toMatchObject({ status: "failed", errorKind: "dead_lettered" });
        for (const h of await headersSeen(env, store, "reaped")) expect(h).toEqual(headers);
        release();
        await advanceUntil(env.clock, env.clock.now() + 1_000, async () => hook.seen.length === 1, "the notification");
        expect(hook.seen[0]?.headers).toEqual(headers);
      } finally {
        release();
        await env.stop();
      }
    });
  }

  it("a cancel of the pending step one byte past the bound, read after a reopen of the store", async () => {
    const store = new MemoryStore();
    const env = await openEnv(hangingRunner(new Promise(() => {})), { store, start: false });
    await env.runtime.submit({ runId: "c", input: enc("a"), options: { headers: over } });
    expect(await env.runtime.cancel("c")).toBe(true);
    for (const h of await headersSeen(env, store, "c")) expect(h).toEqual(over);
    await env.stop();
    const again = await openEnv(hangingRunner(new Promise(() => {})), { store, clock: env.clock, start: false });
    try {
      for (const h of await headersSeen(again, store, "c")) expect(h).toEqual(over);
    } finally {
      await again.stop();
    }
  });

  it("a cancel whose result record cannot be written fails and ends no run; the next cancel ends it with its headers", async () => {
    const store = new ResultRecordsRefused(new MemoryStore());
    const env = await openEnv(hangingRunner(new Promise(() => {})), { store, start: false });
    try {
      await env.runtime.submit({ runId: "f", input: enc("a"), options: { headers: over } });
      store.refusing = true;
      await expect(env.runtime.cancel("f")).rejects.toThrow(/result records refused/);
      expect(store.refused).toBeGreaterThan(1);
      // No end committed: the cancel's request is kept (as when its ending commit fails), the step still waits.
      expect(await env.runtime.status("f")).toMatchObject({ state: "cancelling" });
      expect(await env.runtime.outcome("f")).toBeNull();
      expect((await env.queue.view().stats(STEPS)).pending).toBe(1);
      store.refusing = false;
      expect(await env.runtime.cancel("f")).toBe(true);
      expect((await env.runtime.wait("f")).outcome).toMatchObject({ status: "cancelled", headers: over });
    } finally {
      await env.stop();
    }
  });
});

/** A store that refuses, while `refusing`, every put of a run result record (a store fault, retried). */
class ResultRecordsRefused extends ForwardingStore {
  refusing = false;
  refused = 0;
  override put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (this.refusing && key.includes("/run-results/")) {
      this.refused++;
      return Promise.reject(new Error("result records refused"));
    }
    return super.put(key, body, opts);
  }
}
