/**
 * @module What killed writers leave in a LocalStore (issue J, item 4): a
 * process killed with SIGKILL mid-put leaves its temporary file (`%tmp.*`);
 * the next writer open removes it, while a live process's temporary file
 * stays. A refused open writes no manifest (see engine-missing-objects).
 */
import { readdirSync, readFileSync } from "node:fs";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, Queue } from "taquba";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

const fixture = fileURLToPath(new URL("./fixtures/put-forever.ts", import.meta.url));
const tempDir = useTempDirs("taquba-leftovers-");
// The child loads only LocalStore through tsx (the whole package took 2 s of CPU) and writes 1 MiB objects:
// 0.7 s of CPU up to the kill, against 1.2 s with a 64 MiB object (filled and copied before its first
// temporary file), which at load 30 on two cores took up to 41 s of wall time. The limit guards against
// a hang and is stretched by the load, read while the test runs (support/load.ts).
const CHILD_TEST_MS = 30_000;

/** Paths, relative to `dir`, of every temporary file under it. */
async function temporaries(dir: string): Promise<string[]> {
  const all = await readdir(dir, { recursive: true });
  return all.filter((p) => p.split(/[\\/]/).pop()!.startsWith("%tmp.")).sort();
}

/** Whether every thread of `pid` is stopped (SIGSTOP has taken hold); true where that cannot be read (not Linux). */
function allThreadsStopped(pid: number): boolean {
  try {
    // The state follows the command name in parentheses, which may itself hold spaces.
    const states = readdirSync(`/proc/${pid}/task`).map((t) => {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    });
    return states.every((s) => s === "T" || s === "t");
  } catch {
    return true;
  }
}

/**
 * Starts a child writing `key` over and over in `dir`, and SIGKILLs it mid-put: stopped (SIGSTOP) while
 * its temporary file is there, so the put cannot end between the look and the kill. A look that finds
 * the put ended while the child was being stopped lets it run on and looks again.
 */
async function killMidPut(dir: string, key: string): Promise<void> {
  const child = startScript(fixture, [dir, key]);
  await child.waitFor((lines) => lines.includes("READY"));
  await until(
    "the child is stopped mid-put",
    async () => {
      if ((await temporaries(dir)).length === 0) return false;
      process.kill(child.pid, "SIGSTOP");
      await until("the child is stopped", () => allThreadsStopped(child.pid), 20_000, { child: child.pid });
      if ((await temporaries(dir)).length > 0) return true;
      process.kill(child.pid, "SIGCONT");
      return false;
    },
    20_000,
    { child: child.pid },
  );
  await child.kill();
  expect((await temporaries(dir)).length).toBeGreaterThan(0);
}

describe("temporary files of killed writers", () => {
  it("are removed when the next writer opens; a live process's are kept", { timeout: loadLimitTimeout(CHILD_TEST_MS) }, () =>
    withinLoadLimit(CHILD_TEST_MS, async () => {
      const dir = await tempDir();
      await killMidPut(dir, "scratch/big");
      // A put in flight in this (live) process must survive the sweep.
      await writeFile(join(dir, `%tmp.${process.pid}.1.livefile`), "in flight");
      const engine = await Engine.open(new LocalStore(dir));
      await engine.close();
      expect(await temporaries(dir)).toEqual([`%tmp.${process.pid}.1.livefile`]);
    }),
  );

  it("under a queue's payload folder are removed when the queue opens", { timeout: loadLimitTimeout(CHILD_TEST_MS) }, () =>
    withinLoadLimit(CHILD_TEST_MS, async () => {
      const dir = await tempDir();
      await killMidPut(dir, "orders/payloads/big");
      const queue = await Queue.open(new LocalStore(dir), "orders");
      await queue.close();
      expect(await temporaries(dir)).toEqual([]);
    }),
  );
});
