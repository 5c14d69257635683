/**
 * @module The run queue wait of another process: it grows while the process
 * is runnable but not run (three busy processes sharing one core), not while
 * it waits for a timer, and it is 0 for a process that does not exist. The
 * waits for a child (`until` with `child`) do not count it against the bound.
 */
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { watchRunQueueWait } from "./run-queue-wait.js";
import { spawnTied } from "./tied-children.js";
import { until } from "./until.js";

const counted = existsSync("/proc/self/schedstat") && existsSync("/usr/bin/taskset");

/** A Node process running `code`, pinned to the first core; resolves with its pid once it printed its first line. */
async function pinned(code: string): Promise<number> {
  const child = spawnTied("/usr/bin/taskset", ["-c", "0", process.execPath, "-e", `console.log("started"); ${code}`], { stdio: ["pipe", "pipe", "ignore"] });
  await new Promise((r) => child.stdout!.once("data", r));
  return child.pid!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!counted)("run queue wait", () => {
  it("grows while a process is runnable but not run, not while it sleeps", async () => {
    const busy = [await pinned("for (;;);"), await pinned("for (;;);"), await pinned("for (;;);")];
    const sleeper = await pinned("setTimeout(() => undefined, 60_000)");
    const watches = [...busy, sleeper].map((pid) => watchRunQueueWait(pid));
    await sleep(1_000);
    const [a, b, c, idle] = watches.map((w) => w.waitedMs());
    for (const w of watches) w.stop();
    // Three busy processes on one core: each waits about two thirds of the time (more when other work runs
    // there too), 2 s in all, while their CPU time is 1 s at most.
    expect(a! + b! + c!, `waits of the three busy processes: ${a}, ${b} and ${c} ms`).toBeGreaterThan(1_400);
    expect(idle, "a process waiting for its timer").toBeLessThan(100);
  });

  it("is 0 for a process that does not exist", async () => {
    const w = watchRunQueueWait(2 ** 22 + 12_345);
    await sleep(50);
    expect(w.waitedMs()).toBe(0);
    w.stop();
  });

  it("until with a child stretches its bound by the time the child waited to be run", async () => {
    const child = await pinned("for (;;);");
    await pinned("for (;;);");
    await pinned("for (;;);");
    const waits = watchRunQueueWait(child);
    const from = Date.now();
    await expect(until("never", () => false, 200, { child })).rejects.toThrow("timed out waiting for never");
    const took = Date.now() - from;
    const waited = waits.waitedMs();
    waits.stop();
    // The child waits two thirds of the time or more: the bound of 200 ms is what is left once its waits are taken out.
    expect(took - waited, `${took} ms, ${waited} ms of it with the child waiting to be run`).toBeGreaterThan(150);
  });
});
