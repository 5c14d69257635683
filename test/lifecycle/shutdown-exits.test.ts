/**
 * @module A process whose workers stopped exits without closing its queue:
 * the queue's own timers (maintenance deadlines such as a finished job's
 * retention) do not keep it alive, while a worker waiting for work does.
 */
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { startScript } from "../support/child-script.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/shutdown-exits.ts", import.meta.url));

describe("the process after its workers stopped, queue left open", () => {
  for (const mode of ["runner", "queue"] as const) {
    const what = mode === "runner" ? "worker.shutdown()" : "a runWorker loop's abort";
    it(`exits within 1 s of ${what} (LocalStore, real timers)`, { timeout: 60_000 }, async () => {
      const child = startScript(FIXTURE, [mode]);
      await child.waitFor((lines) => lines.includes("shut down"));
      const shutAt = Date.now();
      const exit = await Promise.race([child.exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 1_000))]);
      if (exit === "hung") await child.kill();
      expect(exit, `the process was still alive 1 s after the worker stopped (stderr: ${child.stderr()})`).not.toBe("hung");
      expect(Date.now() - shutAt).toBeLessThan(1_000);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(child.lines[0]).toMatch(/^result: (3|processed)$/);
    });
  }

  it("stays up while a worker waits on an empty queue with nothing due", { timeout: 60_000 }, async () => {
    const child = startScript(FIXTURE, ["idle"]);
    const exit = await child.exited;
    expect(child.lines, child.stderr()).toContain("processed");
    expect(exit).toEqual({ code: 0, signal: null });
  });
});
