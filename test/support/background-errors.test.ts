/**
 * @module A child process's background failures against the ones its test
 * expects: an expected one passes, any other fails the check with the
 * child's name, the failure and where it was thrown. A real child process
 * reporting through `backgroundReporting()`.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ELECTED_OWNER_FAILURES } from "../client/fixtures/expected-failures.js";
import { backgroundFailures, expectNoUnexpectedFailures, unexpectedFailures } from "./background-errors.js";
import { ChildScenario } from "./child-scenario.js";
import { startScript } from "./child-script.js";
import { loadLimitTimeout, withinLoadLimit } from "./load.js";

const CHILD = fileURLToPath(new URL("./fixtures/reports-failures.ts", import.meta.url));
// The child loads the package through tsx: some 3 s of CPU, tens of seconds of wall time on two loaded cores.
const CHILD_TEST_MS = 60_000;

describe("a child's background failures", () => {
  it("pass when expected, and fail the check naming the child, each other failure and its stack", { timeout: loadLimitTimeout(CHILD_TEST_MS) }, () =>
    withinLoadLimit(CHILD_TEST_MS, async () => {
      const run = new ChildScenario(CHILD_TEST_MS);
      const child = run.track("owner 2", startScript(CHILD, []));
      expect(await child.exited, child.stderr()).toEqual({ code: 0, signal: null });
      expect(backgroundFailures(child)).toHaveLength(4);
      const unexpected = unexpectedFailures(child, ELECTED_OWNER_FAILURES);
      expect(unexpected.map((f) => f.split(" | ")[0])).toEqual([
        "G a request could not be applied: RangeError: an index past the end",
        "G workflow run order-1 step 0 failed on its last attempt; the run fails: PaymentDeclinedError: card declined",
        "G Error: the checkpoint could not be written",
      ]);
      expect(unexpected[1]).toMatch(/ \| at runStep \(app\.ts:41:13\)$/);

      let thrown: unknown;
      try {
        expectNoUnexpectedFailures("owner 2", child, ELECTED_OWNER_FAILURES);
      } catch (err) {
        thrown = err;
      }
      const message = (thrown as Error).message;
      expect(message).toMatch(/^owner 2 reported 3 unexpected background failures:/);
      expect(message).toContain("RangeError: an index past the end\n    at ");
      expect(message).toContain("reports-failures.ts");
      expect(message).not.toContain("FencedError");

      expect(() => run.expectNoUnexpectedFailures(() => ELECTED_OWNER_FAILURES)).toThrow(/owner 2: G a request could not be applied: RangeError/);
      // Every failure expected: nothing to report.
      expect(() => run.expectNoUnexpectedFailures(() => [...ELECTED_OWNER_FAILURES, { pattern: /^G /, why: "all of them" }])).not.toThrow();
      await run.stop();
    }),
  );
});
