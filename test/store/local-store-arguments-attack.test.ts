/**
 * @module LocalStore's refusals of what it is given, none of whose
 * messages a test checked: a directory that is no path (empty, not a
 * string, with a NUL), an option of the wrong type, a watched prefix that
 * is no directory, and a key whose file path (each name short enough)
 * passes what the file system allows. Each is a ValidationError saying
 * what was wrong and what to do, and makes nothing on disk.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore, ValidationError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const freshDir = useTempDirs("taquba-local-arguments-");

describe("LocalStore refuses what it cannot use", () => {
  it("a directory that is no path, or an option of the wrong type, is a ValidationError naming what it got", async () => {
    for (const [dir, got] of [
      ["", '""'],
      [42, "42"],
      [undefined, "undefined"],
      ["with\0nul", "with"],
    ] as const) {
      const make = () => new LocalStore(dir as unknown as string);
      expect(make, String(dir)).toThrow(ValidationError);
      expect(make, String(dir)).toThrow(/LocalStore needs a directory path, got /);
      expect(make, String(dir)).toThrow(got);
    }
    const root = join(await freshDir(), "store");
    expect(() => new LocalStore(root, { putThread: "yes" as unknown as boolean })).toThrow(/LocalStoreOptions\.putThread must be true or false, got "yes"/);
    expect(await readdir(join(root, ".."))).toEqual([]);
  });

  it("a watched prefix must name a directory: one without its closing '/' is refused", async () => {
    const store = new LocalStore(await freshDir());
    expect(() => store.directoryOf("jobs")).toThrow(/a directory prefix ends with "\/", got "jobs"/);
    expect(store.directoryOf("")).toBe(store.root);
    expect(store.directoryOf("jobs/")).toMatch(/jobs/);
  });

  it("a key whose names are each short enough but whose whole file path is too long fails put and get naming the key, and makes nothing", async () => {
    // A deep store directory (each name under 255 bytes) and a key of upper-case segments (three bytes each on disk).
    let root = await freshDir();
    for (let i = 0; i < 6; i++) root = join(root, "d".repeat(200));
    const store = new LocalStore(root);
    const key = Array.from({ length: 12 }, (_, i) => `${String.fromCharCode(65 + i)}`.repeat(80)).join("/");
    const err = (await store.put(key, new Uint8Array([1])).catch((e: unknown) => e)) as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toMatch(
      /object key "AAAA.*" needs a file path of \d+ bytes, longer than the local file system allows; use a store directory with a shorter path, or shorter keys/,
    );
    expect(err.retryable).toBe(false);
    const read = (await store.get(key).catch((e: unknown) => e)) as ValidationError;
    expect(read).toBeInstanceOf(ValidationError);
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual([]);
    // A short key in the same store works.
    await store.put("short", new Uint8Array([2]));
    expect((await store.get("short"))?.body).toEqual(new Uint8Array([2]));
  });
});
