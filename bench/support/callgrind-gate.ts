/**
 * @module A bench's measured window for callgrind run by
 * bench/callgrind-gated.ts: with `GATE` set (a file name the driver
 * gives), `gateOpen` prints a line the driver answers by turning
 * callgrind's instrumentation on and making the file, and waits for the
 * file; `gateClose` prints the window's units and waits for the driver to
 * turn it off and remove the file. Without `GATE` both return at once, so
 * the bench runs as before.
 *
 * Why: a run under full instrumentation spends most of its time on the
 * process's start and the JIT's warm-up, which two N then subtract; on a
 * loaded machine such runs took over half an hour. Uninstrumented, the
 * warm-up runs several times faster, and the window's count is the warm
 * work alone (the JIT's compiles that still fall in it included).
 */
import { existsSync } from "node:fs";

const GATE = process.env.GATE;
// A poll a fifth of a second apart: the timer's own instructions in the window stay far below one step's.
const POLL_MS = 200;

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, POLL_MS));
}

/** Opens the measured window (see the module). */
export async function gateOpen(): Promise<void> {
  if (GATE === undefined) return;
  console.log(`gate: open ${process.pid}`);
  await until(() => existsSync(GATE));
}

/** Closes the measured window, which held `units` of the bench's work (steps, acks). */
export async function gateClose(units: number): Promise<void> {
  if (GATE === undefined) return;
  console.log(`gate: close ${process.pid} ${units}`);
  await until(() => !existsSync(GATE));
}
