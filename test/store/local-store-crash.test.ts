/**
 * @module LocalStore durability against SIGKILL: a child process puts in a loop and is
 * killed; every acknowledged object must be whole, and no temporary file may
 * show as an object.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore } from "taquba";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { labelOf } from "./fixtures/crash-bodies.js";

const script = fileURLToPath(new URL("./fixtures/local-put-loop.ts", import.meta.url));
const writersScript = fileURLToPath(new URL("./fixtures/local-put-writers.ts", import.meta.url));
const tempDir = useTempDirs("taquba-local-crash-");
// Each round starts a child that loads the store through tsx (seconds of CPU on a loaded machine): the
// limits guard against a hang and grow with the load (three rounds took 61 s at a load of 17 on two cores).

/** Runs the put loop in a child, kills it with SIGKILL after `acked` acknowledged puts, and returns the keys it acknowledged. */
async function runAndKill(dir: string, first: number, acked: number): Promise<string[]> {
  const loop = startScript(script, [dir, String(first)]);
  await loop.waitFor((lines) => lines.length >= acked);
  const { signal } = await loop.kill();
  if (signal !== "SIGKILL") throw new Error(`put loop exited without being killed: ${loop.stderr()}`);
  return loop.lines.map((line) => line.split(" ")[0]!);
}

describe("LocalStore after SIGKILL", () => {
  it("holds every acknowledged put whole and never shows a torn or temporary object", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      const dir = await tempDir();
      const acknowledged: string[] = [];
      // Rounds start at spaced indexes so that each round's keys are new.
      for (let round = 0; round < 3; round++) {
        acknowledged.push(...(await runAndKill(dir, round * 100_000, 25 + round * 10)));
      }
      const store = new LocalStore(dir);
      for (const key of acknowledged) {
        const got = await store.get(key);
        expect(got, key).not.toBeNull();
        expect(labelOf(got!.body), key).toBe(key);
      }
      // Everything listed (including puts in flight at the kill) is whole.
      const listed: string[] = [];
      for await (const o of store.list("")) listed.push(o.key);
      expect(listed).toEqual(expect.arrayContaining(acknowledged));
      for (const key of listed) {
        const body = (await store.get(key))!.body;
        const label = labelOf(body);
        expect(label, key).not.toBeNull();
        if (key !== "latest") expect(label).toBe(key);
        else expect(label!.startsWith("latest-")).toBe(true);
      }
      // Temporary files may remain on disk after a kill, but are not objects.
      const onDisk = await readdir(join(dir, "objs%2F"));
      expect(onDisk.filter((n) => !n.startsWith("%tmp.")).length).toBe(listed.length - 1);
    }),
  );

  // Both ways a put can be made: the thread pool alone, and the put thread taking create-if-absent puts whenever it is free.
  it.each(["pool", "thread"] as const)(
    "killed at random points among concurrent puts (%s), shows no object half written under its final name",
    { timeout: loadLimitTimeout(120_000) },
    (putPath) =>
      withinLoadLimit(120_000, async () => {
        const rnd = testRandom(`LocalStore kill points ${putPath}`);
        const dir = await tempDir();
        const acknowledged = new Set<string>();
        for (let round = 0; round < 4; round++) {
          const writers = startScript(writersScript, [dir, String(round * 1_000_000), putPath]);
          // A random point: after some acknowledged puts, then a random fraction of one more put's time
          // (an O_DSYNC write is most of it): before, during or after the write and the rename or link.
          const after = 1 + rnd.int(30);
          await writers.waitFor((lines) => lines.length >= after);
          await new Promise((r) => setTimeout(r, rnd.random() * 3));
          const { signal } = await writers.kill();
          if (signal !== "SIGKILL") throw new Error(`writers exited without being killed: ${writers.stderr()}`);
          for (const line of writers.lines) if (line !== "") acknowledged.add(line);
        }
        const store = new LocalStore(dir);
        const listed: string[] = [];
        for await (const o of store.list("")) listed.push(o.key);
        expect(listed).toEqual(expect.arrayContaining([...acknowledged]));
        for (const key of listed) {
          const label = labelOf((await store.get(key))!.body);
          expect(label, key).not.toBeNull();
          if (key === "latest") expect(label!.startsWith("latest-"), key).toBe(true);
          else expect(label, key).toBe(key);
        }
        // Every file on disk under a final name (not a temporary one) is whole, listed or not.
        const files = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile() && !d.name.startsWith("%tmp."));
        expect(files.length).toBe(listed.length);
        for (const f of files) expect(labelOf(await readFile(join(f.parentPath ?? f.path, f.name)))).not.toBeNull();
        // The leftovers of the killed writers go at the next writer's open.
        await store.removeLeftovers("");
        const left = (await readdir(dir, { recursive: true })).filter((p) => String(p).split("/").pop()!.startsWith("%tmp."));
        expect(left).toEqual([]);
      }),
  );
});
