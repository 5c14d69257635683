/**
 * A worker's wait for work (`WorkNotifier.wait`): ended by a notify of its
 * queue or by its signal's abort, whichever comes first, each wait once,
 * leaving no listener on the signal and no waiter behind.
 */
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { WorkNotifier } from "../../runtime/queue/notifier.js";

/** Whether `p` has settled by the end of the current microtasks. */
const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await new Promise<void>((r) => setImmediate(r));
  return done;
};

describe("WorkNotifier.wait", () => {
  it("resolves at once when the queue was notified since the epoch read, or the signal is already aborted", async () => {
    const n = new WorkNotifier();
    const seen = n.epoch("a");
    n.notify("a");
    expect(await settled(n.wait("a", seen))).toBe(true);
    const c = new AbortController();
    c.abort();
    expect(await settled(n.wait("a", n.epoch("a"), c.signal))).toBe(true);
  });

  it("wakes every waiter of the notified queue only, and removes their abort listeners", async () => {
    const n = new WorkNotifier();
    const signals = [new AbortController(), new AbortController()].map((c) => c.signal);
    const a = signals.map((s) => n.wait("a", n.epoch("a"), s));
    const plain = n.wait("a", n.epoch("a"));
    const b = n.wait("b", n.epoch("b"));
    expect(signals.map((s) => getEventListeners(s, "abort").length)).toEqual([1, 1]);
    n.notify("a");
    expect(await settled(Promise.all([...a, plain]))).toBe(true);
    expect(await settled(b)).toBe(false);
    expect(signals.map((s) => getEventListeners(s, "abort").length)).toEqual([0, 0]);
    n.notify("b");
    expect(await settled(b)).toBe(true);
  });

  it("ends a wait on its signal's abort, and a later notify finds no waiter left", async () => {
    const n = new WorkNotifier();
    const waits = Array.from({ length: 1000 }, () => {
      const c = new AbortController();
      return { c, p: n.wait("q", n.epoch("q"), c.signal) };
    });
    for (const w of waits) w.c.abort();
    expect(await settled(Promise.all(waits.map((w) => w.p)))).toBe(true);
    expect(waits.every((w) => getEventListeners(w.c.signal, "abort").length === 0)).toBe(true);
    // An abort after its wait ended changes nothing; a notify with no waiters only moves the epoch.
    const c = new AbortController();
    const p = n.wait("q", n.epoch("q"), c.signal);
    n.notify("q");
    c.abort();
    expect(await settled(p)).toBe(true);
    expect(n.epoch("q")).toBe(1);
  });
});
