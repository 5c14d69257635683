/**
 * @module LocalStore never makes its directory again once it used it, even
 * when the directory goes in the narrowest window: right after a put found
 * it still there, before the put makes the directories of its key. The
 * file system is the real one; its `stat` is wrapped only to remove the
 * store's directory (for real) the moment that check returns.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LocalStore, StoreRequestError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

/** When `run` is set, it is called (and cleared) once a `stat` of `path` returned. */
const afterStat = vi.hoisted((): { path: string | undefined; run: (() => Promise<void>) | undefined } => ({ path: undefined, run: undefined }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const stat = (async (...args: Parameters<typeof real.stat>) => {
    const result = await real.stat(...args);
    const run = afterStat.run;
    if (run !== undefined && args[0] === afterStat.path) {
      afterStat.run = undefined;
      await run();
    }
    return result;
  }) as typeof real.stat;
  return { ...real, default: { ...real, stat }, stat };
});

const { mkdir, rm, stat } = await import("node:fs/promises");
const freshDir = useTempDirs("taquba-local-root-");
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Removes `dir` the moment the next `stat` of it returns (as if another program removed it then). */
function removeRightAfterCheck(dir: string): { readonly removed: boolean } {
  const state = { removed: false };
  afterStat.path = dir;
  afterStat.run = async () => {
    await rm(dir, { recursive: true });
    state.removed = true;
  };
  return state;
}

afterEach(() => {
  afterStat.run = undefined;
});

describe("LocalStore: its directory removed between a put's check and its mkdir", () => {
  it.each([
    ["a key in a new directory", "new/dir/k"],
    ["a key at the top", "top"],
    ["a key in a directory that existed", "wal/2"],
  ])("%s: the put fails with StoreRequestError and the directory stays gone", async (_what, key) => {
    const dir = join(await freshDir(), "store");
    // Seen by a read only, so the next put checks the directory rather than making it.
    await new LocalStore(dir).put("wal/1", enc("a"));
    const store = new LocalStore(dir);
    expect((await store.get("wal/1"))?.body).toEqual(enc("a"));
    const hook = removeRightAfterCheck(dir);
    const err = await store.put(key, enc("b")).catch((e: unknown) => e);
    expect(hook.removed, "the directory was removed at the check").toBe(true);
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as Error).message).toMatch(/the store's directory was removed while this store was in use/);
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("a put after the failed one fails the same way, and a directory restored by hand is used again", async () => {
    const dir = join(await freshDir(), "store");
    await new LocalStore(dir).put("wal/1", enc("a"));
    const store = new LocalStore(dir);
    expect(await store.get("wal/1")).not.toBeNull();
    removeRightAfterCheck(dir);
    await expect(store.put("wal/2", enc("b"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(store.put("wal/3", enc("c"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
    // Restored (here: made again by hand, as from a backup): puts work again.
    await mkdir(dir);
    await store.put("wal/4", enc("d"));
    expect((await new LocalStore(dir).get("wal/4"))?.body).toEqual(enc("d"));
  });

  it("a first put on a directory never seen makes it (and its parents), as before", async () => {
    const dir = join(await freshDir(), "not", "yet");
    const store = new LocalStore(dir);
    await store.put("a/b", enc("v"));
    expect((await stat(dir)).isDirectory()).toBe(true);
    expect((await store.get("a/b"))?.body).toEqual(enc("v"));
  });
});
