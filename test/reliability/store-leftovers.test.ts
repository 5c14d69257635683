/**
 * @module What killed writers leave in a LocalStore (issue J, item 4): a
 * process killed with SIGKILL mid-put leaves its temporary file (`%tmp.*`);
 * the next writer open removes it, while a live process's temporary file
 * stays. A refused open writes no manifest (see engine-missing-objects).
 */
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
// The child loads only LocalStore through tsx (0.7 s of CPU; the whole package took 2 s): at load 30-35 on
// two cores a test took 7-27 s of wall time (13-23 s with the whole package). The limit guards against a
// hang and is stretched by the load, read while the test runs (support/load.ts).
const CHILD_TEST_MS = 30_000;

/** Paths, relative to `dir`, of every temporary file under it. */
async function temporaries(dir: string): Promise<string[]> {
  const all = await readdir(dir, { recursive: true });
  return all.filter((p) => p.split(/[\\/]/).pop()!.startsWith("%tmp.")).sort();
}

/** Starts a child writing `key` over and over in `dir`, and SIGKILLs it mid-put. */
async function killMidPut(dir: string, key: string): Promise<void> {
  const child = startScript(fixture, [dir, key]);
  await child.waitFor((lines) => lines.includes("READY"));
  // Before its first temporary file the child copies the 64 MiB body (LocalStore's private copy): 5.6 to
  // 23.9 s at load 27-32 on two cores, 88-97% of it the child waiting to be run, which the bound does not count.
  await until("the child is mid-put", async () => (await temporaries(dir)).length > 0, 20_000, { child: child.pid });
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
