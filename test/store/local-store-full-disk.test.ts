/**
 * @module A LocalStore on a full file system: a real tmpfs of 256 KiB,
 * mounted when the tests run as root on Linux (elsewhere the file is
 * skipped, saying why). A put that finds no space fails with a retryable
 * `StoreUnavailableError` saying the file system is full and what to do
 * (not the usual reachability and credentials), leaves no temporary file,
 * keeps every earlier object whole, and succeeds once space is freed.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalStore, StoreUnavailableError } from "taquba";
import { sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { removeSmallFileSystem, smallFileSystem } from "../support/small-file-system.js";

const mounted = smallFileSystem("256k");
// Create-if-absent puts (those the put thread makes) on a file system of their own.
const mountedForCreates = mounted === undefined ? undefined : smallFileSystem("256k");

afterAll(() => {
  removeSmallFileSystem(mounted);
  removeSmallFileSystem(mountedForCreates);
});

/** Every file name under `dir`, walked. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? filesUnder(join(dir, d.name)) : [d.name]));
}

describe.skipIf(mounted === undefined)("LocalStore on a full file system (a tmpfs; needs root on Linux)", () => {
  // A replacing put goes through the thread pool; a create-if-absent put (the WAL's) through the put thread.
  it.each([
    { kind: "a put", createOnly: false },
    { kind: "a create-if-absent put (through the put thread)", createOnly: true },
  ])(
    "refuses $kind that finds no space with a retryable error saying so, keeps what it held, and takes puts again once space is freed",
    async ({ createOnly }) => {
      const root = join(createOnly ? mountedForCreates! : mounted!, "store");
      const store = new LocalStore(root);
      const opts = createOnly ? { ifNoneMatch: "*" as const } : {};
      const body = (i: number) => new Uint8Array(16 * 1024).fill(i);
      const stored: string[] = [];
      let refused: unknown;
      for (let i = 0; i < 64 && refused === undefined; i++) {
        try {
          await store.put(`objects/${i}`, body(i), opts);
          stored.push(`objects/${i}`);
        } catch (err) {
          refused = err;
        }
      }
      if (createOnly) expect(sharedPutThread().running, "the puts went through the put thread").toBe(true);
      expect(stored.length, "some objects fit").toBeGreaterThan(2);
      expect(refused).toBeInstanceOf(StoreUnavailableError);
      const err = refused as StoreUnavailableError;
      expect(err.retryable).toBe(true);
      expect(err.message).toContain("is full: free space on it");
      expect(err.message).not.toContain("credentials");

      // No temporary file is left, and every object stored before is whole.
      expect(filesUnder(root).filter((name) => name.startsWith("%tmp."))).toEqual([]);
      for (const [i, key] of stored.entries()) expect((await store.get(key))?.body).toEqual(body(i));

      // Space freed: the same put lands.
      await store.delete(stored[0]!);
      await store.delete(stored[1]!);
      const next = `objects/${stored.length}`;
      await store.put(next, body(stored.length), opts);
      expect((await store.get(next))?.body).toEqual(body(stored.length));
    },
  );
});
