/**
 * Preloaded (`node --import`) into every Node child process a test starts
 * through test/support/tied-children.ts: the child's stdin is a pipe from the
 * test process, and its end means that process is gone (exited, crashed, or
 * was killed with SIGKILL by the test runner), so the child exits too instead
 * of outliving the test. It also holds when the parent was gone before this
 * child got here: the pipe has ended already.
 *
 * Inert without TAQUBA_TEST_LIFELINE, which it removes from the environment,
 * so a grandchild that inherits the preload or the environment is left to
 * the child that started it.
 */
import process from "node:process";

if (process.env.TAQUBA_TEST_LIFELINE !== undefined) {
  delete process.env.TAQUBA_TEST_LIFELINE;
  const parentGone = () => process.exit(70);
  process.stdin.on("end", parentGone);
  process.stdin.on("error", parentGone);
  process.stdin.resume();
  // The lifeline must not keep a child that finished its work alive.
  process.stdin.unref();
}
