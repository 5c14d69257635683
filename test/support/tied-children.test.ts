/**
 * @module The tie between a test and the child processes it starts: a child
 * dies after its test, when its parent exits, and when its parent is
 * SIGKILLed (the case no exit handler can cover).
 */
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startScript } from "./child-script.js";
import { loadLimitTimeout, withinLoadLimit } from "./load.js";
import { useTempDirs } from "./temp-dirs.js";
import { spawnTied, tiedChildrenRunning } from "./tied-children.js";
import { until } from "./until.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/tie-parent.ts", import.meta.url));
const tempDir = useTempDirs("taquba-tied-");

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

  let writtenDir: string | undefined;
  let writer: number | undefined;

  it("a child the test leaves writing into a temporary directory keeps writing at the end of the test", async () => {
    writtenDir = await tempDir();
    // Creates folders and files as fast as it can, as a worker writing a store does.
    const script = `const fs = require("node:fs"); for (let i = 0; ; i++) { fs.mkdirSync(process.argv[1] + "/d" + (i % 50), { recursive: true }); fs.writeFileSync(process.argv[1] + "/d" + (i % 50) + "/f" + i, "x"); }`;
    const child = spawnTied(process.execPath, ["-e", script, writtenDir]);
    writer = child.pid;
    await until("the child to write", () => existsSync(`${writtenDir}/d1`), 10_000);
  });

  it("is killed before the directory is removed, which then succeeds", () => {
    // Had the removal run while the child wrote, it would have failed the previous test's cleanup with ENOTEMPTY.
    expect(alive(writer!)).toBe(false);
    expect(existsSync(writtenDir!)).toBe(false);
  });

  for (const mode of ["exit", "hang"] as const) {
    const how = mode === "exit" ? "exits" : "is killed with SIGKILL";
    // The child loads tsx and starts a grandchild: 4-11 s of wall time on two cores at load 14-20; the limit is stretched by the load.
    it(`a child's own child dies when the child ${how}`, { timeout: loadLimitTimeout(20_000) }, () =>
      withinLoadLimit(20_000, async () => {
        const parent = startScript(FIXTURE, [mode]);
        await parent.waitFor((lines) => lines.length > 0);
        const grandchild = Number(parent.lines[0]);
        // With `exit`, the child's exit handler may have killed it already.
        if (mode === "hang") {
          expect(alive(grandchild)).toBe(true);
          expect((await parent.kill()).signal).toBe("SIGKILL");
        } else expect((await parent.exited).code).toBe(0);
        await until(`process ${grandchild} to end`, () => !alive(grandchild), 5_000);
      }),
    );
  }
});
