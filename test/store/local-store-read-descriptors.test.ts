/**
 * @module A LocalStore read (get, ranged get, read into a caller's buffer)
 * ends with its file closed: a caller that counts its open files, or
 * removes the directory, right after the read finds none left by it. The
 * close used to be started and not awaited, so a count taken in the turn
 * after the read saw the file still open now and then (once in a few
 * hundred reads at load 40).
 */
import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LocalStore } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-read-descriptors-");
const enc = (s: string) => new TextEncoder().encode(s);

/** This process's open descriptors, read synchronously so that no close in flight lands meanwhile. */
const openFiles = () => readdirSync("/proc/self/fd").length;

describe.skipIf(process.platform !== "linux")("LocalStore reads and their files", () => {
  it("a get, a ranged get and a read into a buffer, of a present and of an absent key, return with no file of theirs open", async () => {
    const store = new LocalStore(await tempDir());
    // Plain puts (through the thread pool): the put thread, with descriptors of its own, is not started.
    await store.put("d/k", enc("value"));
    const into = new Uint8Array(3);
    const before = openFiles();
    const left: string[] = [];
    for (let round = 0; round < 300; round++) {
      const reads: [string, () => Promise<unknown>][] = [
        ["get", () => store.get("d/k")],
        ["getRange", () => store.getRange("d/k", 1, 3)],
        ["getRangeInto", () => store.getRangeInto("d/k", 1, into)],
        ["get of an absent key", () => store.get("d/absent")],
      ];
      for (const [name, read] of reads) {
        await read();
        const now = openFiles();
        if (now !== before) left.push(`${name} in round ${round}: ${now - before} more`);
      }
    }
    expect(left).toEqual([]);
    expect(new TextDecoder().decode(into)).toBe("alu");
    expect(new TextDecoder().decode((await store.get("d/k"))!.body)).toBe("value");
  });

  it("a read that fails after opening its file (a directory where the object's file belongs) closes it too", async () => {
    const store = new LocalStore(await tempDir());
    await store.put("d/k", enc("value"));
    const { mkdir } = await import("node:fs/promises");
    const { join } = await import("node:path");
    await mkdir(join(store.root, "d%2F", "squat"));
    const before = openFiles();
    for (let round = 0; round < 50; round++) {
      await expect(store.get("d/squat")).rejects.toThrow(/directory stands where the object's file belongs/);
      expect(openFiles()).toBe(before);
    }
  });
});
