/**
 * @module The deferred `cancelSignal` of claimed jobs and steps: each object
 * reads its own claim's state, and defining it leaves nothing behind.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Queue } from "taquba";
import { MemoryStore } from "taquba";
import { CancelState, cancelRequestedOf, defineCancelSignal } from "../../runtime/queue/cancel-state.js";

const RealAbortController = globalThis.AbortController;
afterEach(() => {
  globalThis.AbortController = RealAbortController;
});

describe("defineCancelSignal", () => {
  it("gives every object the state it was defined with", () => {
    const a = new CancelState();
    const b = new CancelState();
    const ja = { id: "a" };
    const jb = { id: "b" };
    defineCancelSignal(ja, a);
    defineCancelSignal(jb, b);
    // A step made from a claimed job reads through the job to the claim's state.
    const step = { run: "r" };
    defineCancelSignal(step, ja as unknown as CancelState);
    b.request(new Error("stop b"));
    expect(cancelRequestedOf(jb as unknown as CancelState)).toBe(true);
    expect(cancelRequestedOf(ja as unknown as CancelState)).toBe(false);
    expect(cancelRequestedOf(step as unknown as CancelState)).toBe(false);
    expect((jb as unknown as CancelState).cancelSignal.aborted).toBe(true);
    expect((ja as unknown as CancelState).cancelSignal.aborted).toBe(false);
    a.request(new Error("stop a"));
    expect(cancelRequestedOf(step as unknown as CancelState)).toBe(true);
    expect((step as unknown as CancelState).cancelSignal.reason).toEqual(new Error("stop a"));
  });

  it("adds one enumerable key, and a hidden slot that cannot be changed", () => {
    const s = new CancelState();
    const job = { id: "a", payload: 1 };
    defineCancelSignal(job, s);
    expect(Object.keys(job)).toEqual(["id", "payload", "cancelSignal"]);
    const [slot] = Object.getOwnPropertySymbols(job);
    const d = Object.getOwnPropertyDescriptor(job, slot!);
    expect(d).toEqual({ value: s, writable: false, enumerable: false, configurable: false });
  });

  it("throws on a frozen object and still defines the next one", () => {
    const frozen = Object.freeze({ id: "x" });
    expect(() => defineCancelSignal(frozen, new CancelState())).toThrow(TypeError);
    const s = new CancelState();
    const job = { id: "y" };
    defineCancelSignal(job, s);
    s.request(new Error("stop"));
    expect(cancelRequestedOf(job as unknown as CancelState)).toBe(true);
  });

  it("a claimed job's state is read through its claim without making a signal, until the signal is read", async () => {
    let made = 0;
    globalThis.AbortController = class extends RealAbortController {
      constructor() {
        super();
        made++;
      }
    };
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      await queue.enqueue("jobs", new Uint8Array([1]));
      const job = (await queue.claim("jobs"))!;
      // Counted from here: the queue's own signals are not the claim's.
      made = 0;
      // A step made from the job reads through the job, and the job through its claim, to the claim's state.
      const step = { run: "r" };
      defineCancelSignal(step, job);
      expect(cancelRequestedOf(job)).toBe(false);
      expect(await queue.cancelJob(job.id)).toBe("requested");
      expect(cancelRequestedOf(job)).toBe(true);
      expect(cancelRequestedOf(step as unknown as CancelState)).toBe(true);
      expect(made).toBe(0);
      expect(job.cancelSignal.aborted).toBe(true);
      expect(made).toBe(1);
    } finally {
      await queue.close();
    }
  });
});
