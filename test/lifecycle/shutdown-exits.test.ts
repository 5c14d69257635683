/**
 * @module A process whose workers stopped exits without closing its queue:
 * the queue's own timers (maintenance deadlines such as a finished job's
 * retention) do not keep it alive, while a worker waiting for work does.
 */
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { expectExitsSoon } from "../support/exits-soon.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { expectNoUnexpectedFailures } from "../support/background-errors.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/shutdown-exits.ts", import.meta.url));
// The child takes about 3 s of CPU to load the package through tsx: 20-39 s of wall time per test on two cores
// at load 14-20. The limit guards against a hang and is stretched by the load, read while the test runs
// (support/load.ts).
const CHILD_TEST_MS = 60_000;
// The child's store: removed after each test, once the child has exited.
const tempDir = useTempDirs("taquba-shutdown-");

describe("the process after its workers stopped, queue left open", () => {
  for (const mode of ["runner", "queue"] as const) {
    const what = mode === "runner" ? "worker.shutdown()" : "a runWorker loop's abort";
    it(`exits on its own after ${what}, nothing left open (LocalStore, real timers)`, { timeout: loadLimitTimeout(CHILD_TEST_MS) }, () =>
      withinLoadLimit(CHILD_TEST_MS, async () => {
        const child = startScript(FIXTURE, [mode, await tempDir()]);
        await expectExitsSoon(child, "shut down", what);
        expect(child.lines[0]).toMatch(/^result: (3|processed)$/);
      }),
    );
  }

  it("stays up while a worker waits on an empty queue with nothing due", { timeout: loadLimitTimeout(CHILD_TEST_MS) }, () =>
    withinLoadLimit(CHILD_TEST_MS, async () => {
      const child = startScript(FIXTURE, ["idle", await tempDir()]);
      const exit = await child.exited;
      expect(child.lines, child.stderr()).toContain("processed");
      expect(exit).toEqual({ code: 0, signal: null });
      expectNoUnexpectedFailures("the idle process", child);
    }),
  );
});
