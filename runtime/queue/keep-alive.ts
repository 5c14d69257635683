/**
 * @module What keeps a process alive while a worker waits for work. The
 * queue's own timers (maintenance deadlines) do not, so that a process whose
 * workers stopped exits without closing its queue; a worker waiting for work
 * is a reason to stay up, even when nothing is due and no timer is armed.
 */
import { MAX_TIMEOUT_MS } from "../clock.js";

let holders = 0;
let handle: ReturnType<typeof setInterval> | undefined;

/** Keeps the process alive until the returned function is called (once). */
export function holdProcess(): () => void {
  holders++;
  // The longest interval a timer takes: it never fires in practice, it only holds the event loop.
  handle ??= setInterval(() => undefined, MAX_TIMEOUT_MS);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holders === 0 && handle !== undefined) {
      clearInterval(handle);
      handle = undefined;
    }
  };
}
