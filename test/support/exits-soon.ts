/**
 * @module The check that a child process exits on its own after a line it
 * prints ("closed", "shut down"): nothing it made may keep it alive.
 *
 * The child prints `active: <resources>` (`process.getActiveResourcesInfo()`,
 * which lists what keeps the event loop alive: timers, sockets, file
 * requests, but not unreferenced timers) one turn after that line, once the
 * microtasks the close left have run. Besides its standard streams, only
 * requests in flight may be there (a file handle closing: `CloseReq`,
 * `FSReqCallback`; they end on their own): a timer of any length, an
 * immediate or a socket fails the check at once, whatever the machine's
 * load. The exit must then
 * come with code 0, within 5 s less the time this process was not run or
 * the child waited to be run (run-queue-wait.ts), the larger of the two
 * (the exit itself is only process teardown; a wall-clock bound of 1 s
 * failed on two loaded cores with nothing but the standard streams open,
 * and at load 21-36 the child's own waits were 740 and 1,088 ms of exits
 * taking 1,094 and 1,836 ms, of which the test process's stalls showed 304
 * and 141); a child that never exits is killed after 30 s.
 */
import { expect } from "vitest";
import type { ChildExit, ChildScript } from "./child-script.js";
import { stalledWithin, startLocalLatenessProbe } from "./lateness-probe.js";
import { watchRunQueueWait } from "./run-queue-wait.js";
import { expectNoUnexpectedFailures } from "./background-errors.js";

const BOUND_MS = 5_000;
const HUNG_MS = 30_000;
/** Resources a process has for its standard streams (pipes to the test, or a terminal). */
const STDIO = new Set(["PipeWrap", "TTYWrap"]);
/** A request in flight (`FSReqCallback`, `FSReqPromise`, `CloseReq`, `WriteWrap`...) rather than a handle that stays. */
const inFlight = (resource: string) => /Req|WriteWrap|ShutdownWrap/.test(resource);

/** In the child, after its last line: prints what keeps it alive, one turn later. */
export function printActiveResources(): void {
  setImmediate(() => console.log(`active: ${process.getActiveResourcesInfo().join(",")}`));
}

/**
 * Waits for `line`, then for the exit; fails if anything but the standard
 * streams was open, unless the child exited soon with code 0, or when it
 * reported a background failure (none is expected of a process closing).
 */
export async function expectExitsSoon(child: ChildScript, line: string, what: string): Promise<void> {
  const stalls = startLocalLatenessProbe();
  try {
    await child.waitFor((lines) => lines.includes(line));
    const at = Date.now();
    const childWaits = watchRunQueueWait(child.pid);
    const exit = await Promise.race([child.exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), HUNG_MS))]);
    const exitedAt = Date.now();
    childWaits.stop();
    if (exit === "hung") await child.kill();
    const active = child.lines.find((l) => l.startsWith("active: "));
    expect(active, `the process printed no "active:" line after ${what} (stderr: ${child.stderr()})`).toBeDefined();
    const open = active!
      .slice("active: ".length)
      .split(",")
      .filter((r) => r !== "" && !STDIO.has(r) && !inFlight(r));
    expect(open, `still open one turn after ${what}, besides the standard streams and requests in flight (${active})`).toEqual([]);
    expect(exit, `the process was still alive ${HUNG_MS / 1000} s after ${what} (stderr: ${child.stderr()})`).not.toBe("hung");
    const took = exitedAt - at;
    // Either process not being run holds the exit up: the larger of the two (they overlap on a busy machine).
    const testNotRun = stalledWithin([stalls.lines], at, exitedAt);
    const childNotRun = childWaits.waitedMs();
    const notRun = Math.max(testNotRun, childNotRun);
    expect(
      took - notRun,
      `exit ${took} ms after ${what}; ${testNotRun} ms of it with the test process not run, ${childNotRun} ms with the process waiting to be run`,
    ).toBeLessThan(BOUND_MS);
    expect(exit as ChildExit).toEqual({ code: 0, signal: null });
    expectNoUnexpectedFailures(`the process exiting after ${what}`, child);
  } finally {
    stalls.stop();
  }
}
