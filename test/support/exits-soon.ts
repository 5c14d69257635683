/**
 * @module The check that a child process exits on its own soon after a line
 * it prints ("closed", "shut down"): no timer or handle may keep it alive.
 *
 * Within 1 s, less the time this process was not run meanwhile (on busy
 * cores the child's exit and this process's read of it are late by as long
 * as the machine stalls, whatever the code does): a timer of a second or
 * more that keeps the child alive still fails it. One that never exits is
 * killed after 30 s. The child prints `active: <resources>` (its
 * `process.getActiveResourcesInfo()`) after that line, so a failure says what
 * was still open.
 */
import { expect } from "vitest";
import type { ChildExit, ChildScript } from "./child-script.js";
import { stalledWithin, startLocalLatenessProbe } from "./lateness-probe.js";

const BOUND_MS = 1_000;
const HUNG_MS = 30_000;

/** Prints what keeps this process alive, for `expectExitsSoon`'s message. Call it last, in the child. */
export function printActiveResources(): void {
  console.log(`active: ${process.getActiveResourcesInfo().join(",") || "nothing"}`);
}

/** Waits for `line`, then for the exit; fails unless the child exited within the bound and with code 0. */
export async function expectExitsSoon(child: ChildScript, line: string, what: string): Promise<void> {
  const stalls = startLocalLatenessProbe();
  try {
    await child.waitFor((lines) => lines.includes(line));
    const at = Date.now();
    const exit = await Promise.race([child.exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), HUNG_MS))]);
    const exitedAt = Date.now();
    const active = child.lines.find((l) => l.startsWith("active: ")) ?? "active: (not printed)";
    if (exit === "hung") await child.kill();
    expect(exit, `the process was still alive ${HUNG_MS / 1000} s after ${what} (${active}; stderr: ${child.stderr()})`).not.toBe("hung");
    const took = exitedAt - at;
    const notRun = stalledWithin([stalls.lines], at, exitedAt);
    expect(took - notRun, `exit ${took} ms after ${what}, ${notRun} ms of it with the test process not run (${active})`).toBeLessThan(BOUND_MS);
    expect(exit as ChildExit).toEqual({ code: 0, signal: null });
  } finally {
    stalls.stop();
  }
}
