/**
 * @module The CPU time a child process has used, read from /proc: a test
 * that waits for a child to get somewhere can bound the wait by the work
 * the child did instead of by wall time. On cores shared by several test
 * runs a child may wait many times longer to be run than it runs; the CPU
 * it spends on one step stays about what that step needs, so a bound on it
 * fails a child that spins (a retry loop, a livelock) and not a slow one.
 */
import { readFileSync } from "node:fs";

/** The kernel's unit for utime and stime in /proc (USER_HZ, fixed at 100 on Linux for user space). */
const MS_PER_TICK = 10;

/**
 * User plus system CPU time (ms, every thread) of process `pid` so far, or
 * undefined where it cannot be read: not Linux, or the process was reaped.
 */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: the fields after it start past its last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the line, 11 and 12 counting from the state (field 3).
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks * MS_PER_TICK : undefined;
}
