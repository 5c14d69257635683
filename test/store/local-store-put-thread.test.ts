/**
 * @module LocalStore's put thread (store/local-put-thread.ts): create-if-absent
 * puts made in one trip to a worker thread keep what a put through the
 * thread pool promises (whole objects, the etag a read reports, no
 * temporary file, `PreconditionFailedError` for a name taken, errors mapped
 * alike), the thread ends with `close()` and never keeps a process alive.
 * The thread stopping under a put is in local-store-put-thread-stop.test.ts
 * (it turns the process's thread off for good).
 */
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, PreconditionFailedError, ValidationError } from "taquba";
import { PutThread, PutThreadFailure, sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-put-thread-");
const enc = (s: string) => new TextEncoder().encode(s);

/** Every file name under `dir`, walked. */
async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map((p) => String(p).split("/").pop()!);
}

describe("LocalStore's put thread", () => {
  it("takes create-if-absent puts only, started by the first: whole objects, the etag a read reports, no temporary file, PreconditionFailedError for a name taken", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await store.put("wal/plain", enc("replaced"));
    expect(sharedPutThread().running, "a replacing put goes through the pool").toBe(false);
    const { etag } = await store.put("wal/1", enc("first"), { ifNoneMatch: "*" });
    expect(sharedPutThread().running, "the first create-if-absent put starts the thread").toBe(true);
    const got = await store.get("wal/1");
    expect(new TextDecoder().decode(got!.body)).toBe("first");
    expect(got!.etag).toBe(etag);
    const err = await store.put("wal/1", enc("second"), { ifNoneMatch: "*" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PreconditionFailedError);
    expect(new TextDecoder().decode((await store.get("wal/1"))!.body)).toBe("first");
    // Many in a row, an empty body among them, each whole.
    for (let i = 0; i < 50; i++) await store.put(`wal/n${i}`, enc(i === 7 ? "" : `v${i}`), { ifNoneMatch: "*" });
    for (let i = 0; i < 50; i++) expect(new TextDecoder().decode((await store.get(`wal/n${i}`))!.body)).toBe(i === 7 ? "" : `v${i}`);
    // Puts in a row into one directory leave the thread's file made ahead for the next, empty and never listed; close() removes it.
    expect((await readdir(join(dir, "wal%2F"))).filter((n) => n.startsWith("%tmp.")).length).toBe(1);
    await sharedPutThread().close();
    expect((await filesUnder(dir)).filter((n) => n.startsWith("%tmp."))).toEqual([]);
  });

  it("hands a put into a directory it already made to the thread in the call's own turn, and the put resolves whole", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await store.put("wal/0", enc("first"), { ifNoneMatch: "*" });
    // An await of the directory's settled promise would wait behind every microtask queued before it (at a WAL
    // object's landing, the continuations of the commits it released): the put would reach the disk after them.
    const put = store.put("wal/1", enc("second"), { ifNoneMatch: "*" });
    expect(sharedPutThread().busy, "the put is on the thread before the caller's turn ends").toBe(true);
    await put;
    expect(new TextDecoder().decode((await store.get("wal/1"))!.body)).toBe("second");
    // A new directory is still made (and its entry synced) before its first put goes.
    const first = store.put("new/0", enc("third"), { ifNoneMatch: "*" });
    expect(sharedPutThread().busy, "a directory not yet made is waited for").toBe(false);
    await first;
    expect(new TextDecoder().decode((await store.get("new/0"))!.body)).toBe("third");
    await sharedPutThread().close();
  });

  it("answers failures as a put through the pool does: a removed store directory, a directory or a file in the way", async () => {
    /** What each failing create-if-absent put gives, with the store's path and the temporary name taken out. */
    const failures = async (putThread: boolean) => {
      const root = join(await tempDir(), "store");
      const store = new LocalStore(root, { putThread });
      await store.put("d/warm", enc("v"), { ifNoneMatch: "*" });
      await mkdir(join(root, "d%2F", "squat"));
      await writeFile(join(root, "f%2F"), "not a directory");
      const answers: string[] = [];
      const attempt = async (key: string) => {
        const err = await store.put(key, enc("v"), { ifNoneMatch: "*" }).catch((e: unknown) => e);
        answers.push(
          `${key}: ${(err as Error).name} ${(err as Error).message
            .split(root)
            .join("<root>")
            .replace(/%tmp\.[0-9a-f.]+/g, "%tmp.*")}`,
        );
      };
      await attempt("d/squat");
      await attempt("f/k");
      expect((await filesUnder(root)).filter((n) => n.startsWith("%tmp."))).toEqual([]);
      await rm(root, { recursive: true });
      await attempt("d/after");
      return answers;
    };
    const pool = await failures(false);
    expect(pool[0]).toMatch(/PreconditionFailedError/);
    expect(pool[1]).toMatch(/StoreRequestError .*file stands where the key's directory belongs/);
    expect(pool[2]).toMatch(/StoreRequestError .*the store's directory was removed while this store was in use/);
    expect(await failures(true)).toEqual(pool);
    expect(sharedPutThread().running).toBe(true);
  });

  it("is turned off by putThread: false, and refuses an option that is not true or false", async () => {
    expect(() => new LocalStore("/tmp/x", { putThread: "yes" as unknown as boolean })).toThrow(ValidationError);
    expect(() => new LocalStore("/tmp/x", null as unknown as { putThread?: boolean })).toThrow(/LocalStoreOptions must be an object, got null/);
    const thread = sharedPutThread();
    const store = new LocalStore(await tempDir(), { putThread: false });
    // While the thread is busy with another put, none of this store's could go to it anyway; so check the files instead:
    // a put through the pool never reaches the thread, which stays as it was.
    const before = thread.running;
    await store.put("wal/1", enc("v"), { ifNoneMatch: "*" });
    expect(thread.running).toBe(before);
    expect(new TextDecoder().decode((await store.get("wal/1"))!.body)).toBe("v");
  });

  it("ends with close() once the put in flight settled; a later put starts it again", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    const put = (name: string) => thread.put(join(dir, `%tmp.${process.pid}.${name}`), join(dir, name), dir, enc(name), true);
    const first = put("a");
    expect(thread.canTake(1), "one put at a time").toBe(false);
    const closed = thread.close();
    const stat = await first;
    await closed;
    expect(stat.size).toBe(1n);
    expect(thread.running).toBe(false);
    await put("b");
    expect(thread.running).toBe(true);
    // A failure comes back as the system call's error.
    const err = await put("a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PutThreadFailure);
    expect((err as PutThreadFailure).error).toMatchObject({ code: "EEXIST", syscall: "link" });
    expect((err as PutThreadFailure).inPlace).toBeUndefined();
    await thread.close();
    expect(thread.running).toBe(false);
    expect((await readdir(dir)).sort()).toEqual(["a", "b"]);
  });

  it("never keeps a process alive: one that put through it ends on its own", { timeout: loadLimitTimeout(30_000) }, async () => {
    const child = startScript(fileURLToPath(new URL("./fixtures/local-put-once.ts", import.meta.url)), [await tempDir()]);
    const ended = await child.exited;
    expect(child.lines).toContain("put through the thread");
    expect(ended).toEqual({ code: 0, signal: null });
  });
});
