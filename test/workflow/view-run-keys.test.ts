/**
 * @module A view's lent reads build a run's keys once per run: the keys of
 * the runs read last are kept (bounded), and a run read again reads the
 * same keys as its state moves from active to terminated; a run evicted
 * from the bound still answers, with its keys built again. A terminated
 * run's record is decoded once per stored value: read again while its
 * value token holds, read anew once the record is rewritten or removed.
 */
import { describe, expect, it } from "vitest";
import { MemoStore, StepOutcome, WorkflowView } from "taquba";
import { ViewRunKeys } from "../../runtime/workflow/runs/view-run-keys.js";
import { runKey, stepPointerKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { decodeTerminalRecord, encodeTerminalRecord } from "../../runtime/workflow/records/records.js";
import { dec, enc, type Env, openEnv, runnerOf, until } from "./helpers.js";

describe("ViewRunKeys", () => {
  it("keeps the keys of the last runs asked for, the oldest dropped first", () => {
    const keys = new ViewRunKeys("steps", 3);
    const a = keys.of("run-a");
    expect([a.run, a.pointer, a.terminal]).toEqual([runKey("steps", "run-a"), stepPointerKey("steps", "run-a"), terminalRecordKey("steps", "run-a")]);
    expect(keys.of("run-a")).toBe(a);
    keys.of("run-b");
    keys.of("run-c");
    keys.of("run-d");
    expect(keys.size).toBe(3);
    // run-a was the oldest: made again, with the same keys.
    const again = keys.of("run-a");
    expect(again).not.toBe(a);
    expect([again.run, again.pointer, again.terminal]).toEqual([a.run, a.pointer, a.terminal]);
    expect(keys.size).toBe(3);
  });
});

describe("a view's lent reads of a run's records", () => {
  it("read a run's three keys from active to terminated, and answer unknown for another run", async () => {
    let release: (() => void) | undefined;
    const runner = runnerOf(async (step) => {
      if (dec(step.payload) === "held") await new Promise<void>((r) => (release = r));
      return StepOutcome.succeed(enc(`result of ${dec(step.payload)}`));
    });
    const env = await openEnv(runner);
    try {
      const read: string[] = [];
      const q = env.queue;
      const view = new WorkflowView(
        {
          kvGet: (k) => q.kvGet(k),
          job: (id) => q.view().job(id),
          kvScan: (p, o) => q.kvScan(p, o),
          kvBorrowNow: (k: string) => {
            read.push(k);
            return q.kvBorrowNow(k);
          },
        },
        new MemoStore(env.store, "workflow-steps-memo"),
      );
      const q0 = "workflow-steps";
      await env.runtime.submit({ runId: "held", input: enc("held") });
      await until(() => release !== undefined, "the held run at its step");
      for (let i = 0; i < 3; i++) expect((await view.state("held")).kind).toBe("active");
      expect(read.splice(0)).toEqual(
        Array(3)
          .fill([runKey(q0, "held"), stepPointerKey(q0, "held")])
          .flat(),
      );
      release!();
      await env.runtime.wait("held");
      for (let i = 0; i < 3; i++) {
        expect((await view.state("held")).kind).toBe("terminated");
        expect(dec((await view.outcome("held"))!.result!)).toBe("result of held");
      }
      expect(new Set(read.splice(0))).toEqual(new Set([runKey(q0, "held"), terminalRecordKey(q0, "held")]));
      expect((await view.state("never")).kind).toBe("unknown");
      expect(await view.status("never")).toBeNull();
      expect(read).toEqual([runKey(q0, "never"), terminalRecordKey(q0, "never"), runKey(q0, "never"), terminalRecordKey(q0, "never")]);
    } finally {
      release?.();
      await env.stop();
    }
  });

  it("answer for more runs than it keeps keys of, each run as a copying view does", async () => {
    const runner = runnerOf(async (step) => StepOutcome.succeed(enc(`result of ${dec(step.payload)}`)));
    const env = await openEnv(runner);
    try {
      const copying = new WorkflowView(env.queue.view(), new MemoStore(env.store, "workflow-steps-memo"));
      const ids = Array.from({ length: 520 }, (_, i) => `run-${i}`);
      await Promise.all(ids.map((id) => env.runtime.submit({ runId: id, input: enc(id) })));
      await Promise.all(ids.map((id) => env.runtime.wait(id)));
      // Read twice over in order: past the bound, every read of the second pass makes its run's keys again.
      for (let pass = 0; pass < 2; pass++) {
        for (const id of [ids[0]!, ids[519]!, ids[260]!]) {
          expect(dec((await env.runtime.outcome(id))!.result!)).toBe(`result of ${id}`);
          expect(await env.runtime.status(id)).toEqual(await copying.status(id));
        }
      }
      for (const id of ids) expect((await env.runtime.view().state(id)).kind).toBe("terminated");
      expect(dec((await env.runtime.outcome(ids[0]!))!.result!)).toBe(`result of ${ids[0]}`);
    } finally {
      await env.stop();
    }
  });
});

/** A view over `env`'s queue that counts its borrowed reads of `key`, with the queue's value tokens or without. */
function countingView(env: Env, key: string, tokens: boolean): { view: WorkflowView; borrowed: () => number } {
  const q = env.queue;
  let borrowed = 0;
  const source = {
    kvGet: (k: string) => q.kvGet(k),
    job: (id: string) => q.view().job(id),
    kvScan: (p: string, o?: Parameters<typeof q.kvScan>[1]) => q.kvScan(p, o),
    kvBorrowNow: (k: string) => {
      if (k === key) borrowed++;
      return q.kvBorrowNow(k);
    },
    ...(tokens ? { kvTokenNow: (k: string) => q.kvTokenNow(k) } : {}),
  };
  return { view: new WorkflowView(source, new MemoStore(env.store, "workflow-steps-memo")), borrowed: () => borrowed };
}

describe("a view's terminal records", () => {
  it("are decoded once per stored value: the same answers while the token holds, the rewritten record's after", async () => {
    const runner = runnerOf(async (step) => StepOutcome.succeed(enc(`result of ${dec(step.payload)}`)));
    const env = await openEnv(runner);
    try {
      const q = env.queue;
      const tk = terminalRecordKey("workflow-steps", "r");
      const { view, borrowed } = countingView(env, tk, true);
      await env.runtime.submit({ runId: "r", input: enc("r") });
      await env.runtime.wait("r");
      const first = await view.outcome("r");
      expect(dec(first!.result!)).toBe("result of r");
      // An answer of the caller's own: changing it changes no later answer from the kept record.
      first!.result!.fill(0x21);
      for (let i = 0; i < 3; i++) {
        expect(dec((await view.outcome("r"))!.result!)).toBe("result of r");
        expect((await view.status("r"))?.step).toBe(0);
      }
      expect(borrowed()).toBe(1);

      // Rewritten (same run, another final step and result): the next read decodes the new value.
      const t = decodeTerminalRecord((await q.kvGet(tk))!, tk);
      await q.kvPut(tk, encodeTerminalRecord({ ...t, finalStep: 7, inline: { ...t.inline!, result: enc("rewritten") } }));
      expect((await view.status("r"))?.step).toBe(7);
      expect(dec((await view.outcome("r"))!.result!)).toBe("rewritten");
      expect(borrowed()).toBe(2);

      // Removed: unknown, not the record kept.
      await q.kvDelete(tk);
      expect(await view.status("r")).toBeNull();
      expect(await view.outcome("r")).toBeNull();
    } finally {
      await env.stop();
    }
  });

  it("are decoded on every read by a view whose source gives no tokens", async () => {
    const runner = runnerOf(async (step) => StepOutcome.succeed(enc(`result of ${dec(step.payload)}`)));
    const env = await openEnv(runner);
    try {
      const q = env.queue;
      const tk = terminalRecordKey("workflow-steps", "r");
      const { view, borrowed } = countingView(env, tk, false);
      await env.runtime.submit({ runId: "r", input: enc("r") });
      await env.runtime.wait("r");
      for (let i = 0; i < 3; i++) expect(dec((await view.outcome("r"))!.result!)).toBe("result of r");
      expect(borrowed()).toBe(3);
      const t = decodeTerminalRecord((await q.kvGet(tk))!, tk);
      await q.kvPut(tk, encodeTerminalRecord({ ...t, finalStep: 7 }));
      expect((await view.status("r"))?.step).toBe(7);
    } finally {
      await env.stop();
    }
  });

  it("refuses a token reader that is not a function", async () => {
    const env = await openEnv(runnerOf(async () => StepOutcome.succeed(enc("x"))));
    try {
      const q = env.queue;
      const source = { kvGet: (k: string) => q.kvGet(k), job: (id: string) => q.view().job(id), kvScan: (p: string) => q.kvScan(p), kvTokenNow: 3 };
      expect(() => new WorkflowView(source as never, new MemoStore(env.store, "workflow-steps-memo"))).toThrow(/source\.kvTokenNow/);
    } finally {
      await env.stop();
    }
  });
});
