/**
 * @module A run's end is told from every other end of its run id by the
 * jobs it enqueues (its notification, its parent's and its children's
 * wake-ups) and by the result record it is read from, also when a custom
 * `WorkflowQueue` hands a later submission's (or a `retryRun` pass's) step
 * the job id an earlier one's had, so the later end repeats the earlier
 * end's token while the earlier end's job is still queued.
 */
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { pack } from "msgpackr";
import { NoopTerminalHook, StepOutcome, StoreCorruptedError, WorkflowRuntime, type RunOutcome } from "taquba";
import { decodeOutcomeRecord, encodeOutcomeRecord, outcomeRecordOfEnd } from "../../runtime/workflow/records/records.js";
import { HEADER_CHILD_ENDED, HEADER_PARENT_ENDED, HEADER_TERMINAL } from "../../runtime/workflow/records/reserved.js";
import { RunId } from "../../runtime/workflow/runs/run-id.js";
import { addTerminalEffects, terminalMarkersFor, type TerminationInput } from "../../runtime/workflow/runs/terminal.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { namingQueue } from "./fixtures/naming-queue.js";
import { livesOf } from "./fixtures/script-lives.js";
import { dec, enc, type Env, openEnv, overInline, recordingHook, runnerOf, until } from "./helpers.js";

const Q = "workflow-steps";

/** The dedup keys the end `t` enqueues its jobs under, by the job's kind. */
function endJobKeys(t: TerminationInput): Record<string, string | undefined> {
  const effects = addTerminalEffects({ queueName: Q, hook: recordingHook(), memoRetentionMs: undefined, markers: terminalMarkersFor(Q), commits: {} }, t);
  const keys: Record<string, string | undefined> = {};
  for (const e of effects.enqueues) {
    const h = e.opts?.headers ?? {};
    const kind =
      h[HEADER_TERMINAL] !== undefined
        ? "notification"
        : h[HEADER_CHILD_ENDED] !== undefined
          ? "childEnded"
          : h[HEADER_PARENT_ENDED] !== undefined
            ? "parentEnded"
            : "other";
    keys[kind] = e.opts?.dedupKey;
  }
  return keys;
}

/** An end of run "c", a child of "p" with children of its own, in the pass `incarnation` of submission `submission`. */
function endOf(incarnation: string, submission: string | undefined): TerminationInput {
  return {
    runId: RunId.parse("c"),
    incarnation,
    status: "succeeded",
    result: enc("done"),
    finalStep: 0,
    headers: {},
    token: "first:1",
    memoPrefix: "memo",
    nowMs: 1_700_000_000_000,
    submittedAtMs: 1_700_000_000_000,
    parent: { runId: "p", step: 0 },
    hasChildren: true,
    ...(submission === undefined ? {} : { submission }),
  };
}

describe("the jobs a run's end enqueues", () => {
  it("are keyed apart for two passes whose ends repeat one token (the notification, the parent's and the children's wake-ups)", () => {
    const first = endJobKeys(endOf("01JAAAAAAAAAAAAAAAAAAAAAAA", "01JAAAAAAAAAAAAAAAAAAAAAAA"));
    // A later submission, and a retryRun pass of it (same submission, its own incarnation).
    const later = endJobKeys(endOf("01JBBBBBBBBBBBBBBBBBBBBBBB", "01JBBBBBBBBBBBBBBBBBBBBBBB"));
    const retried = endJobKeys(endOf("01JCCCCCCCCCCCCCCCCCCCCCCC", "01JBBBBBBBBBBBBBBBBBBBBBBB"));
    for (const kind of ["notification", "childEnded", "parentEnded"]) {
      expect(first[kind], kind).toBeDefined();
      expect(new Set([first[kind], later[kind], retried[kind]]).size, kind).toBe(3);
    }
    // The same end built again (a replayed reconciliation) keeps its keys: the replay is deduplicated.
    expect(endJobKeys(endOf("01JAAAAAAAAAAAAAAAAAAAAAAA", "01JAAAAAAAAAAAAAAAAAAAAAAA"))).toEqual(first);
  });

  it("keep the keys of every earlier version for a run written before submissions were drawn", () => {
    expect(endJobKeys(endOf("first", undefined))).toEqual({
      notification: "run:c:terminal:first:1",
      childEnded: "run:c:child-ended:first:1",
      parentEnded: "run:c:parent-ended:first:1",
    });
  });
});

describe("a run result record", () => {
  const outcome = { runId: RunId.parse("p"), status: "succeeded" as const, headers: {}, finalStep: 0, result: enc("r") };

  it("names the pass that wrote it, and is that pass's end only", () => {
    const rec = decodeOutcomeRecord(encodeOutcomeRecord({ token: "first:1", incarnation: "01JAAAAAAAAAAAAAAAAAAAAAAA", outcome }), "k");
    expect(rec.incarnation).toBe("01JAAAAAAAAAAAAAAAAAAAAAAA");
    expect(outcomeRecordOfEnd(rec, { token: "first:1", incarnation: "01JAAAAAAAAAAAAAAAAAAAAAAA" })).toBe(true);
    expect(outcomeRecordOfEnd(rec, { token: "first:1", incarnation: "01JBBBBBBBBBBBBBBBBBBBBBBB" })).toBe(false);
    expect(outcomeRecordOfEnd(rec, { token: "first:2", incarnation: "01JAAAAAAAAAAAAAAAAAAAAAAA" })).toBe(false);
    // A child's end written before ends named their pass reads it by its token.
    expect(outcomeRecordOfEnd(rec, { token: "first:1" })).toBe(true);
  });

  it("written before records named their pass is read by its token as before", () => {
    const old = new Uint8Array(pack({ token: "first:1", outcome }));
    const rec = decodeOutcomeRecord(old, "k");
    expect(rec.incarnation).toBeUndefined();
    expect(dec(rec.outcome.result)).toBe("r");
    expect(outcomeRecordOfEnd(rec, { token: "first:1", incarnation: "01JAAAAAAAAAAAAAAAAAAAAAAA" })).toBe(true);
  });

  it("whose pass is no text is damage naming its key", () => {
    for (const incarnation of [7, true, new Uint8Array(1)]) {
      expect(() => decodeOutcomeRecord(new Uint8Array(pack({ token: "first:1", incarnation, outcome })), "the-key"), String(incarnation)).toThrow(
        StoreCorruptedError,
      );
    }
  });
});

/**
 * What the hook heard once `count` ends were notified: `body` ends runs
 * with no worker running (every notification stays queued), naming step
 * jobs from `names`; then a worker starts.
 */
async function notifiedAfter(count: number, body: (env: Env, names: string[]) => Promise<void>): Promise<RunOutcome[]> {
  const names: string[] = [];
  const hook = recordingHook();
  const env = await openEnv(
    runnerOf(async () => StepOutcome.succeed(enc("ran"))),
    { hook, start: false, wrapQueue: namingQueue(names) },
  );
  try {
    await body(env, names);
    const worker = env.runtime.spawn();
    try {
      await until(() => hook.seen.length >= count, `${count} notifications`, 10_000);
      return [...hook.seen];
    } finally {
      await worker.shutdown();
    }
  } finally {
    await env.stop();
  }
}

describe("a run id submitted again whose step a naming queue names as the earlier submission's", () => {
  it("notifies each end while the earlier end's notification is still queued (cancels of waiting steps)", async () => {
    const inputs = ["one", "two", "three", "four"];
    const seen = await notifiedAfter(inputs.length, async (env, names) => {
      for (const input of inputs) {
        names.push("first");
        expect((await env.runtime.submit({ runId: "p", input: enc(input), options: { headers: { input } } })).jobId).toBe("first");
        expect(await env.runtime.cancel("p")).toBe(true);
        // Every end has the token "cancel:first".
        expect((await env.runtime.status("p"))?.state).toBe("terminated");
      }
    });
    expect(seen.map((o) => o.headers.input).sort()).toEqual([...inputs].sort());
    expect(seen.every((o) => o.status === "cancelled")).toBe(true);
  });

  it("notifies each pass retryRun re-opens while the earlier pass's notification is still queued", async () => {
    const seen = await notifiedAfter(4, async (env, names) => {
      names.push("first");
      await env.runtime.submit({ runId: "p", input: enc("one") });
      expect(await env.runtime.cancel("p")).toBe(true);
      const submission = (await env.runtime.inspectRun("p"))?.submission;
      for (let pass = 0; pass < 3; pass++) {
        names.push("first");
        await env.runtime.retryRun("p", { fromStep: 0 });
        expect(await env.runtime.cancel("p")).toBe(true);
      }
      // One submission, four passes, each ended as "cancel:first".
      expect((await env.runtime.inspectRun("p"))?.submission).toBe(submission);
    });
    expect(seen.map((o) => o.status)).toEqual(["cancelled", "cancelled", "cancelled", "cancelled"]);
  });

  it("reads the later end's result record in a runtime that kept the earlier one's (two runtimes over one store)", async () => {
    const namesA: string[] = [];
    const namesB: string[] = [];
    // Results past the terminal record's inline limit: each end writes a run result record under its token.
    const runner = runnerOf(async (s) => StepOutcome.succeed(overInline(`result of ${dec(s.payload)}`)));
    const a = await openEnv(runner, { wrapQueue: namingQueue(namesA) });
    const b = WorkflowRuntime.builder(namingQueue(namesB)(a.queue), a.store, runner, NoopTerminalHook).build();
    try {
      namesA.push("first");
      await a.runtime.submit({ runId: "p", input: enc("one") });
      expect(dec((await a.runtime.wait("p")).outcome?.result).trimEnd()).toBe("result of one");
      // Read again: runtime A now keeps the record it read.
      expect(dec((await a.runtime.outcome("p"))?.result).trimEnd()).toBe("result of one");
      await a.worker?.shutdown();
      const workerB = b.spawn();
      try {
        namesB.push("first");
        await b.submit({ runId: "p", input: enc("two") });
        expect(dec((await b.wait("p")).outcome?.result).trimEnd()).toBe("result of two");
      } finally {
        await workerB.shutdown();
      }
      // The same token ("first:1") ended both; runtime A reports the end that is stored now.
      const seen = await a.runtime.outcome("p");
      expect(dec(seen?.result).trimEnd()).toBe("result of two");
      const end = await a.runtime.wait("p");
      expect(dec(end.outcome?.result).trimEnd()).toBe("result of two");
    } finally {
      await a.queue.close();
    }
  });
});

const script = fileURLToPath(new URL("./fixtures/end-notify-worker.ts", import.meta.url));
const tempDir = useTempDirs("wf-end-notify-crash-");
const life = livesOf(script);

describe("a process SIGKILLed between a run's end and its notification, the run id submitted again with the same step job id", () => {
  it("notifies both ends in the next process", { timeout: scaledForLoad(120_000) }, async () => {
    const dir = await tempDir();
    await life(["end", dir, "one"], "killed");
    const next = await life(["again", dir, "two", "2"], "exits");
    expect(next.lines.filter((l) => l.startsWith("N ")).sort()).toEqual(["N one", "N two"]);
  });
});
