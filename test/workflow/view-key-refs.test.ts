/**
 * @module A view over a queue that checks keys once (`Queue.kvKeyRef`)
 * hands its lent reads the queue's references to a run's keys, made once
 * per run and held with the run's keys (`ViewRunKeys`), so a read does not
 * look its key up among the queue's kept keys. The references leave memory
 * with the run's keys: a view that read thousands of runs holds those of
 * the last 512 only. A key the queue refuses to reference is read as the
 * key, as without references.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { MemoStore, StepOutcome, ValidationError, WorkflowView } from "taquba";
import { KvKeyRef } from "../../runtime/queue/user-keys.js";
import { VIEW_RUN_KEYS_KEPT, ViewRunKeys } from "../../runtime/workflow/runs/view-run-keys.js";
import { runKey, stepPointerKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { dec, enc, type Env, openEnv, runnerOf } from "./helpers.js";

const STEPS = "workflow-steps";
const keyOf = (k: unknown) => (k instanceof KvKeyRef ? k.key : k);

/** A view over `env`'s queue, with its `kvKeyRef` as given, recording what each read is handed. */
function recordingView(env: Env, kvKeyRef: (k: string) => unknown) {
  const q = env.queue;
  const handed: unknown[] = [];
  const made: string[] = [];
  const source = {
    kvGet: (k: string) => q.kvGet(k),
    job: (id: string) => q.view().job(id),
    kvScan: (p: string, o?: Parameters<typeof q.kvScan>[1]) => q.kvScan(p, o),
    kvBorrowNow: (k: string | KvKeyRef) => {
      handed.push(k);
      return q.kvBorrowNow(k);
    },
    kvTokenNow: (k: string | KvKeyRef) => {
      handed.push(k);
      return q.kvTokenNow(k);
    },
    kvKeyRef: (k: string) => {
      made.push(k);
      return kvKeyRef(k) as KvKeyRef;
    },
  };
  return { view: new WorkflowView(source, new MemoStore(env.store, "workflow-steps-memo")), handed, made };
}

describe("a view's key references", () => {
  it("are what its lent reads hand the queue, made once per run however often the run is read", async () => {
    const runner = runnerOf(async (step) => StepOutcome.succeed(enc(`result of ${dec(step.payload)}`)));
    const env = await openEnv(runner);
    try {
      const { view, handed, made } = recordingView(env, (k) => env.queue.kvKeyRef(k));
      const plain = new WorkflowView(env.queue.view(), new MemoStore(env.store, "workflow-steps-memo"));
      for (const id of ["a", "b"]) {
        await env.runtime.submit({ runId: id, input: enc(id) });
        await env.runtime.wait(id);
      }
      for (let i = 0; i < 3; i++) {
        for (const id of ["a", "b", "never"]) {
          expect(await view.status(id)).toEqual(await plain.status(id));
          expect(await view.outcome(id)).toEqual(await plain.outcome(id));
        }
      }
      expect(handed.length).toBeGreaterThan(0);
      expect(handed.every((k) => k instanceof KvKeyRef)).toBe(true);
      const expected = ["a", "b", "never"].flatMap((id) => [runKey(STEPS, id), stepPointerKey(STEPS, id), terminalRecordKey(STEPS, id)]);
      expect(made).toEqual(expected);
      expect(new Set(handed.map(keyOf))).toEqual(new Set(expected.filter((k) => !k.startsWith(stepPointerKey(STEPS, "")))));
    } finally {
      await env.stop();
    }
  });

  it("fall back to the keys when the queue refuses to make one, and a reference that is none is refused at the read", async () => {
    const runner = runnerOf(async (step) => StepOutcome.succeed(enc(`result of ${dec(step.payload)}`)));
    const env = await openEnv(runner);
    try {
      await env.runtime.submit({ runId: "r", input: enc("r") });
      await env.runtime.wait("r");
      const refused = recordingView(env, () => {
        throw new ValidationError("refused");
      });
      expect(dec((await refused.view.outcome("r"))!.result!)).toBe("result of r");
      expect(refused.handed.length).toBeGreaterThan(0);
      expect(refused.handed.every((k) => typeof k === "string")).toBe(true);
      // An untyped source's maker that answers no reference: the queue refuses it as a key, nothing is read as another key.
      const odd = recordingView(env, () => 42);
      await expect(odd.view.outcome("r")).rejects.toBeInstanceOf(ValidationError);
    } finally {
      await env.stop();
    }
  });

  it("are handed by the runtime's own view: a wait and an outcome read hand the queue no key string", async () => {
    const runner = runnerOf(async (step) =>
      step.stepNumber < 2 ? StepOutcome.continueNow(step.payload) : StepOutcome.succeed(enc(`result of ${dec(step.payload)}`)),
    );
    const handed: unknown[] = [];
    const env = await openEnv(runner, {
      wrapQueue: (queue) =>
        new Proxy(queue, {
          get(target, name) {
            if (name === "kvBorrowNow")
              return (k: string | KvKeyRef) => {
                handed.push(k);
                return target.kvBorrowNow(k);
              };
            const v = Reflect.get(target, name, target) as unknown;
            return typeof v === "function" ? v.bind(target) : v;
          },
        }),
    });
    try {
      for (const id of ["x", "y", "z"]) {
        await env.runtime.submit({ runId: id, input: enc(id) });
        await env.runtime.wait(id);
        expect(dec((await env.runtime.outcome(id))!.result!)).toBe(`result of ${id}`);
      }
      expect(handed.length).toBeGreaterThanOrEqual(3 * 3);
      expect(handed.filter((k) => !(k instanceof KvKeyRef))).toEqual([]);
    } finally {
      await env.stop();
    }
  });

  it("leave memory with their run's keys: a view that read many runs holds the references of the last 512 only", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const keys = new ViewRunKeys(STEPS, undefined, (k) => KvKeyRef.of(k));
    const runs = 20 * VIEW_RUN_KEYS_KEPT;
    const early: WeakRef<object>[] = [];
    const kept: object[] = [];
    for (let i = 0; i < runs; i++) {
      const k = keys.of(`run-${i}`);
      expect(k.runRef).toBeInstanceOf(KvKeyRef);
      if (i < 100) early.push(new WeakRef(k.runRef as KvKeyRef), new WeakRef(k.terminalRef as KvKeyRef));
      if (i >= runs - 100) kept.push(k.runRef as KvKeyRef);
      expect(keys.size).toBe(Math.min(i + 1, VIEW_RUN_KEYS_KEPT));
    }
    // WeakRefs made in this turn hold their targets until it ends.
    await new Promise((r) => setImmediate(r));
    gc();
    expect(early.filter((w) => w.deref() !== undefined)).toHaveLength(0);
    // The last runs' references are still the ones the view answers with.
    for (let i = 0; i < 100; i++) expect(keys.of(`run-${runs - 100 + i}`).runRef).toBe(kept[i]);
  });
});
