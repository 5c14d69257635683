/**
 * @module The tie between a test and the child processes it starts: a child
 * dies after its test, when its parent exits, and when its parent is
 * SIGKILLed (the case no exit handler can cover).
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startScript } from "./child-script.js";
import { spawnTied, tiedChildrenRunning } from "./tied-children.js";
import { until } from "./until.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/tie-parent.ts", import.meta.url));

/** Whether `pid` runs: an orphan that ended may stay a zombie here (nothing reaps it), which counts as ended. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe("tied child processes", () => {
  let leftRunning: number | undefined;

  it("a child the test leaves running is still running at the end of the test", () => {
    const child = spawnTied(process.execPath, ["-e", "setInterval(() => {}, 60_000)"]);
    leftRunning = child.pid;
    expect(alive(child.pid!)).toBe(true);
    expect(tiedChildrenRunning()).toBe(1);
  });

  it("is killed once that test ended", () => {
    expect(leftRunning).toBeDefined();
    expect(alive(leftRunning!)).toBe(false);
    expect(tiedChildrenRunning()).toBe(0);
  });

  for (const mode of ["exit", "hang"] as const) {
    const how = mode === "exit" ? "exits" : "is killed with SIGKILL";
    it(`a child's own child dies when the child ${how}`, { timeout: 20_000 }, async () => {
      const parent = startScript(FIXTURE, [mode]);
      await parent.waitFor((lines) => lines.length > 0);
      const grandchild = Number(parent.lines[0]);
      // With `exit`, the child's exit handler may have killed it already.
      if (mode === "hang") {
        expect(alive(grandchild)).toBe(true);
        expect((await parent.kill()).signal).toBe("SIGKILL");
      } else expect((await parent.exited).code).toBe(0);
      await until(`process ${grandchild} to end`, () => !alive(grandchild), 5_000);
    });
  }
});
