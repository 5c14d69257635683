/**
 * @module The side-by-side workload (bench/peer-window.ts) run in a child
 * process under V8 trace flags, with its window marks in the same stdout,
 * and the marks read back: the benches that sort V8's trace lines into
 * windows share this.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Runs peer-window with MARKS=1, WINDOWS=`windows` and `flags` given to
 * node (the child inherits the rest of the environment) and returns its
 * stdout; TRACE=<file> keeps it in that file too.
 */
export function tracePeerWindow(flags: readonly string[], windows: string): string {
  const child = spawnSync(process.execPath, ["--import", "tsx", ...flags, join(here, "..", "peer-window.ts")], {
    cwd: join(here, "..", ".."),
    env: { ...process.env, MARKS: "1", WINDOWS: windows },
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  if (child.status !== 0) throw new Error(`peer-window ended with ${child.status}: ${child.stderr.slice(-2000)}`);
  if (process.env.TRACE !== undefined) writeFileSync(process.env.TRACE, child.stdout);
  return child.stdout;
}

/**
 * The slice a window mark line opens: "window n" (a measured drive, so
 * `window` is true) or "warm-up" at a start, "after n" at an end;
 * undefined for any other line.
 */
export function sliceOfMark(line: string): { name: string; window: boolean } | undefined {
  const mark = /\[window-mark (start|end) ([^\]]*)\]/.exec(line);
  if (mark === null) return undefined;
  const label = mark[2]!.replace("window ", "");
  if (mark[1] === "end") return { name: `after ${label}`, window: false };
  return label === "warm-up" ? { name: "warm-up", window: false } : { name: `window ${label}`, window: true };
}
