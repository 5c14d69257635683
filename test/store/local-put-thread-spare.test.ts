/**
 * @module The put thread's file made ahead (store/local-put-thread.ts): from
 * the second create-if-absent put in a row into one directory, the thread
 * makes the next put's temporary file after answering, and that put writes
 * into it. The file is an empty temporary name: never listed, dropped by a
 * put elsewhere, by a delete that empties its directory, by `close()`, by
 * the thread stopping and at a clean exit, and removed at the next open
 * after a kill. Another program writing into it or removing it never gives
 * a wrong object.
 */
import { appendFileSync, statSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, PreconditionFailedError, StoreUnavailableError } from "taquba";
import { PutThread, sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-put-spare-");
const bytes = (...b: number[]) => new Uint8Array(b);
const FIXTURE = fileURLToPath(new URL("./fixtures/local-put-spare.ts", import.meta.url));

/** The temporary names in `dir` (not walked). */
async function tempsIn(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [])).filter((n) => n.startsWith("%tmp.")).sort();
}

/** Every key the store lists. */
async function keys(store: LocalStore, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

describe.skipIf(process.platform === "win32")("the put thread's file made ahead", () => {
  it("is made from the second put in a row into one directory, and the next put there writes into it", async () => {
    const root = await tempDir();
    const store = new LocalStore(root);
    const thread = sharedPutThread();
    const wal = join(root, "wal%2F");
    await store.put("wal/1", bytes(1), { ifNoneMatch: "*" });
    await thread.tidied();
    expect(await tempsIn(wal), "one put alone leaves nothing behind it").toEqual([]);
    await store.put("wal/2", bytes(2), { ifNoneMatch: "*" });
    await thread.tidied();
    const [spare] = await tempsIn(wal);
    expect(spare, "the second put in a row asks for the next one's file").toBeDefined();
    expect(statSync(join(wal, spare!)).size).toBe(0);
    const spareInode = statSync(join(wal, spare!)).ino;
    expect(await keys(store), "never listed").toEqual(["wal/1", "wal/2"]);

    await store.put("wal/3", bytes(3, 3, 3), { ifNoneMatch: "*" });
    await thread.tidied();
    expect(statSync(join(wal, "3")).ino, "the put wrote into the file made for it").toBe(spareInode);
    expect((await store.get("wal/3"))!.body).toEqual(bytes(3, 3, 3));
    const after = await tempsIn(wal);
    expect(after).toHaveLength(1);
    expect(after[0], "its name went with the put; the next put's file is another").not.toBe(spare);

    // A put elsewhere drops it; a create refused on a taken name leaves no temporary name either.
    await store.put("other/1", bytes(9), { ifNoneMatch: "*" });
    await thread.tidied();
    expect(await tempsIn(wal)).toEqual([]);
    await store.put("other/2", bytes(9), { ifNoneMatch: "*" });
    await expect(store.put("other/2", bytes(8), { ifNoneMatch: "*" })).rejects.toBeInstanceOf(PreconditionFailedError);
    await thread.tidied();
    expect((await store.get("other/2"))!.body).toEqual(bytes(9));
    await store.put("other/3", bytes(7), { ifNoneMatch: "*" });
    await thread.close();
    expect(await tempsIn(join(root, "other%2F")), "close() drops it").toEqual([]);
    expect(await keys(store)).toEqual(["other/1", "other/2", "other/3", "wal/1", "wal/2", "wal/3"]);
  });

  it("does not keep a delete from removing the directory it emptied", async () => {
    const root = await tempDir();
    const store = new LocalStore(root);
    for (const k of ["a", "b", "c"]) await store.put(`d/${k}`, bytes(1), { ifNoneMatch: "*" });
    await sharedPutThread().tidied();
    expect(await tempsIn(join(root, "d%2F"))).toHaveLength(1);
    for (const k of ["a", "b", "c"]) await store.delete(`d/${k}`);
    expect(await readdir(root), "the emptied directory is gone").toEqual([]);
    // The thread's descriptor of the removed file goes with the next put, which lands.
    await store.put("d/again", bytes(5), { ifNoneMatch: "*" });
    expect((await store.get("d/again"))!.body).toEqual(bytes(5));
    expect(await keys(store)).toEqual(["d/again"]);
  });

  it("written to by another program: that put fails saying so, leaves no object, and the next put of the key lands", async () => {
    const root = await tempDir();
    const store = new LocalStore(root);
    const wal = join(root, "wal%2F");
    await store.put("wal/1", bytes(1), { ifNoneMatch: "*" });
    await store.put("wal/2", bytes(2), { ifNoneMatch: "*" });
    await sharedPutThread().tidied();
    const [spare] = await tempsIn(wal);
    appendFileSync(join(wal, spare!), "junk from elsewhere");
    const err = await store.put("wal/3", bytes(3), { ifNoneMatch: "*" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(/held 19 bytes after a write of 1: another program wrote to it/);
    expect(await store.get("wal/3")).toBeNull();
    expect(await keys(store)).toEqual(["wal/1", "wal/2"]);
    expect(await tempsIn(wal), "the spoilt file is removed").toEqual([]);
    await store.put("wal/3", bytes(3), { ifNoneMatch: "*" });
    expect((await store.get("wal/3"))!.body).toEqual(bytes(3));
  });

  it("removed by another program: the put that meant to use it still lands", async () => {
    const root = await tempDir();
    const store = new LocalStore(root);
    const wal = join(root, "wal%2F");
    await store.put("wal/1", bytes(1), { ifNoneMatch: "*" });
    await store.put("wal/2", bytes(2), { ifNoneMatch: "*" });
    await sharedPutThread().tidied();
    for (const name of await tempsIn(wal)) await rm(join(wal, name));
    await store.put("wal/3", bytes(3, 3), { ifNoneMatch: "*" });
    expect((await store.get("wal/3"))!.body).toEqual(bytes(3, 3));
    expect(await keys(store)).toEqual(["wal/1", "wal/2", "wal/3"]);
  });

  it("is removed when the thread stops (killed), with or without a put in flight", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    const name = (n: number) => join(dir, `%tmp.${process.pid}.${n}.spare`);
    await thread.put(name(1), join(dir, "a"), dir, bytes(1), true, name(2));
    await thread.tidied();
    expect(await tempsIn(dir)).toEqual([`%tmp.${process.pid}.2.spare`]);
    await thread.stopForTest();
    expect(await tempsIn(dir)).toEqual([]);
    expect(await readdir(dir)).toEqual(["a"]);
  });

  it.for(["exit", "end"])("a process that ends (%s) after puts in a row leaves no temporary name", { timeout: loadLimitTimeout(30_000) }, async (how) => {
    const dir = await tempDir();
    const child = startScript(FIXTURE, [dir, how]);
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(child.lines).toContain("put through the thread");
    // The child saw the file made ahead before it ended.
    expect(child.lines.find((l) => l.startsWith("names "))).toMatch(/^names %tmp\.\d+\.\d+\.[0-9a-f]+ 1 2 3 4 5$/);
    expect(await readdir(join(dir, "wal%2F"))).toEqual(["1", "2", "3", "4", "5"]);
  });

  it("killed with SIGKILL, a process leaves it as a temporary name: never listed, removed at the next open", {
    timeout: loadLimitTimeout(30_000),
  }, async () => {
    const dir = await tempDir();
    const child = startScript(FIXTURE, [dir, "hang"]);
    await child.waitFor((lines) => lines.some((l) => l.startsWith("names ")));
    expect((await child.kill()).signal).toBe("SIGKILL");
    const left = await tempsIn(join(dir, "wal%2F"));
    expect(left).toHaveLength(1);
    expect(statSync(join(dir, "wal%2F", left[0]!)).size, "empty: made ahead, never written").toBe(0);
    const store = new LocalStore(dir);
    expect(await keys(store)).toEqual(["wal/1", "wal/2", "wal/3", "wal/4", "wal/5"]);
    expect(await store.removeLeftovers("wal/")).toBe(1);
    expect(await tempsIn(join(dir, "wal%2F"))).toEqual([]);
    for (let i = 1; i <= 5; i++) expect((await store.get(`wal/${i}`))!.body).toEqual(bytes(i));
  });
});
