/**
 * @module The in-process announcements of a run's end: every waiter of the
 * run is woken, whether it waits alone or with others, a dropped waiter is
 * not, other runs' waiters are not, and a close wakes every waiter left.
 */
import { describe, expect, it } from "vitest";
import { RunEvents, type RunWait } from "../../runtime/workflow/runs/run-events.js";
import { settle } from "./helpers.js";

/** Whether each of `waits` was woken, after the reactions so far ran. */
async function wokenOf(waits: RunWait[]): Promise<boolean[]> {
  const woken = waits.map(() => false);
  waits.forEach((w, i) => void w.promise.then(() => (woken[i] = true)));
  await settle(3);
  return woken;
}

describe("RunEvents", () => {
  it("wakes a run's one waiter at its end, and a waiter made after the end waits for the next one", async () => {
    const events = new RunEvents();
    const first = events.next("r");
    const other = events.next("s");
    events.terminated("r");
    expect(await wokenOf([first, other])).toEqual([true, false]);
    const later = events.next("r");
    expect(await wokenOf([later])).toEqual([false]);
    events.terminated("r");
    expect(await wokenOf([later])).toEqual([true]);
  });

  it("wakes every waiter of a run however many wait, but none dropped before the end", async () => {
    const events = new RunEvents();
    const waits = [events.next("r"), events.next("r"), events.next("r")];
    // The first and last dropped: the middle one, left alone, is still woken.
    waits[0]!.dispose();
    waits[2]!.dispose();
    const joined = events.next("r");
    events.terminated("r");
    expect(await wokenOf([...waits, joined])).toEqual([false, true, false, true]);
  });

  it("a dropped lone waiter leaves nothing behind: only a later waiter of the run is woken", async () => {
    const events = new RunEvents();
    const dropped = events.next("r");
    dropped.dispose();
    const kept = events.next("r");
    events.terminated("r");
    expect(await wokenOf([dropped, kept])).toEqual([false, true]);
  });

  it("dropping a waiter again, after another took its run's place, leaves the other registered", async () => {
    const events = new RunEvents();
    const dropped = events.next("r");
    dropped.dispose();
    const kept = events.next("r");
    dropped.dispose();
    events.terminated("r");
    expect(await wokenOf([dropped, kept])).toEqual([false, true]);
  });

  it("a waiter dropped while others wait does not take the others' registration with it", async () => {
    const events = new RunEvents();
    const a = events.next("r");
    const b = events.next("r");
    a.dispose();
    b.dispose();
    // Both gone: the run's registration is empty, and a new waiter starts it again.
    const c = events.next("r");
    const d = events.next("r");
    c.dispose();
    events.terminated("r");
    expect(await wokenOf([a, b, c, d])).toEqual([false, false, false, true]);
  });

  it("a close wakes every waiter of every run, lone or not, and later waiters at once", async () => {
    const events = new RunEvents();
    const waits = [events.next("r"), events.next("s"), events.next("s")];
    events.close(new Error("closed"));
    expect(await wokenOf(waits)).toEqual([true, true, true]);
    expect(events.closedError?.message).toBe("closed");
    expect(await wokenOf([events.next("t")])).toEqual([true]);
  });
});
