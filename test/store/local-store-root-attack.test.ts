/**
 * @module Attacks on how LocalStore treats its own directory: a store
 * opened on a path that does not exist yet (nested, relative, behind a
 * symlink) makes it on its first put, also when many puts race; a root
 * removed after use is never made again; one removed and restored by hand
 * is used again. A root that cannot be used (a symlink to nothing, a file,
 * no permission) fails with a non-retryable error saying why. Real
 * temporary directories, no mocks.
 */
import { join, relative } from "node:path";
import { chmod, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue, StoreRequestError, ValidationError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { ChildScenario } from "../support/child-scenario.js";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout } from "../support/load.js";

const refusedScript = fileURLToPath(new URL("./fixtures/local-refused.ts", import.meta.url));
const freshDir = useTempDirs("taquba-local-root-attack-");
/** The permission test's guard against a hang, stretched by the load; the child's CPU time bounds its work. */
const REFUSED_MS = 15_000;
/** The CPU time the permission test's child may spend: it needs about 1.5 s (starting, then four refused attempts). */
const REFUSED_CPU_MS = 10_000;
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = async (store: LocalStore, key: string): Promise<string | undefined> => {
  const o = await store.get(key);
  return o === null ? undefined : new TextDecoder().decode(o.body);
};

describe("LocalStore root attacks", () => {
  it("a store on a nested path that does not exist makes it on the first of many concurrent puts, and every put lands", async () => {
    const root = join(await freshDir(), "a", "b", "c");
    const store = new LocalStore(root);
    const keys = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? `top-${i}` : `d${i % 5}/e${i % 2}/k-${i}`));
    await Promise.all(keys.map((k) => store.put(k, enc(k))));
    for (const k of keys) expect(await text(store, k)).toBe(k);
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed.sort()).toEqual([...keys].sort());
  });

  it("a read or a listing of a root that does not exist yet does not count as seeing it: the first put still makes it", async () => {
    const root = join(await freshDir(), "later");
    const store = new LocalStore(root);
    expect(await store.get("x/y")).toBeNull();
    for await (const _ of store.list("")) expect.unreachable();
    await store.put("x/y", enc("1"));
    expect(await text(store, "x/y")).toBe("1");
  });

  it("a relative path is the directory it names from where the process was when the store was made", async () => {
    const base = await freshDir();
    const root = relative(process.cwd(), join(base, "rel", "store"));
    const store = new LocalStore(root);
    await store.put("k/1", enc("v"));
    expect(await readdir(join(base, "rel", "store"))).not.toHaveLength(0);
    expect(await text(new LocalStore(join(base, "rel", "store")), "k/1")).toBe("v");
  });

  it("a root behind a symlink is used through it; once its target is removed, a put fails and makes nothing", async () => {
    const base = await freshDir();
    const target = join(base, "target");
    await mkdir(target);
    const link = join(base, "link");
    await symlink(target, link);
    const store = new LocalStore(link);
    await store.put("a/b", enc("1"));
    await store.put("c", enc("2"));
    expect(await text(new LocalStore(target), "a/b")).toBe("1");
    await rm(target, { recursive: true });
    await expect(store.put("a/b", enc("3"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(store.put("new/dir/k", enc("3"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(store.put("top", enc("3"))).rejects.toBeInstanceOf(StoreRequestError);
    await expect(readdir(target)).rejects.toThrow(/ENOENT/);
  });

  it("a root removed after use fails concurrent puts into known and new directories, and makes nothing; restored by hand, it is used again", async () => {
    const root = join(await freshDir(), "store");
    const store = new LocalStore(root);
    await store.put("known/k", enc("1"));
    await store.put("top", enc("1"));
    await rm(root, { recursive: true });
    const results = await Promise.allSettled(["known/k", "known/k2", "fresh/x/y", "top", "top2"].map((k) => store.put(k, enc("2"))));
    for (const r of results) {
      expect(r.status).toBe("rejected");
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StoreRequestError);
    }
    await expect(readdir(root)).rejects.toThrow(/ENOENT/);
    // Restored (here: made again, empty) by hand: the store's owner decided, so puts go on.
    await mkdir(root);
    await store.put("known/k", enc("3"));
    await store.put("fresh/x/y", enc("3"));
    expect(await text(store, "known/k")).toBe("3");
    expect(await text(store, "fresh/x/y")).toBe("3");
  });

  it("deleting every object leaves the root in place, so the next put works", async () => {
    const root = join(await freshDir(), "store");
    const store = new LocalStore(root);
    await store.put("a/b/c", enc("1"));
    await store.put("top", enc("1"));
    await store.delete("a/b/c");
    await store.delete("top");
    expect(await readdir(root)).toEqual([]);
    await store.put("a/b/c", enc("2"));
    expect(await text(store, "a/b/c")).toBe("2");
  });
});

describe("LocalStore on a directory it cannot use", () => {
  it("a root that is a symlink to a missing directory fails its first put with a non-retryable error naming the target, and makes nothing", async () => {
    const base = await freshDir();
    const target = join(base, "missing");
    const link = join(base, "link");
    await symlink(target, link);
    const store = new LocalStore(link);
    const err = (await store.put("a/b", enc("1")).catch((e: unknown) => e)) as StoreRequestError;
    expect(err).toBeInstanceOf(StoreRequestError);
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`symbolic link to ${target}, which does not exist`);
    expect(err.message).toMatch(/create that directory/);
    await expect(readdir(target)).rejects.toThrow(/ENOENT/);
    // Made by hand, it is used.
    await mkdir(target);
    await store.put("a/b", enc("2"));
    expect(await text(new LocalStore(target), "a/b")).toBe("2");
  });

  it("a root that is a file, or below one, fails a put with a non-retryable error saying which path is a file", async () => {
    const base = await freshDir();
    const file = join(base, "file");
    await writeFile(file, "not a directory");
    for (const [root, says] of [
      [file, `${file} is a file, not a directory`],
      [join(file, "sub", "store"), `${file} is a file, not a directory`],
    ] as const) {
      const err = (await new LocalStore(root).put("k", enc("1")).catch((e: unknown) => e)) as StoreRequestError;
      expect(err).toBeInstanceOf(StoreRequestError);
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(says);
    }
    expect(await readFile(file, "utf8")).toBe("not a directory");
  });

  it("a root replaced by a file after use fails puts into known and new directories with a non-retryable error", async () => {
    const root = join(await freshDir(), "store");
    const store = new LocalStore(root);
    await store.put("known/k", enc("1"));
    await store.put("top", enc("1"));
    await rm(root, { recursive: true });
    await writeFile(root, "x");
    for (const key of ["known/k", "fresh/x", "top"]) {
      const err = (await store.put(key, enc("2")).catch((e: unknown) => e)) as StoreRequestError;
      expect(err).toBeInstanceOf(StoreRequestError);
      expect(err.message).toContain(`${root} is a file, not a directory`);
    }
    expect(await readFile(root, "utf8")).toBe("x");
  });

  it("a root that is, or lies below, a symbolic link looping back on itself fails puts and Queue.open with a non-retryable error", async () => {
    const base = await freshDir();
    const loop = join(base, "loop");
    await symlink(loop, loop);
    for (const root of [loop, join(loop, "sub")]) {
      const store = new LocalStore(root);
      const err = (await store.put("k", enc("1")).catch((e: unknown) => e)) as StoreRequestError;
      expect(err, root).toBeInstanceOf(StoreRequestError);
      expect(err.retryable).toBe(false);
      expect(err.message).toMatch(/loops back on itself/);
      const warned: unknown[] = [];
      const opened = await Queue.open(store, "q", {
        logger: { warn: (obj) => warned.push(obj), error: (obj) => warned.push(obj) },
        engineOptions: { onBackgroundError: (err) => warned.push({ err }) },
      }).then(
        (q) => q.close().then(() => undefined),
        (e: unknown) => e,
      );
      expect(opened, root).toBeInstanceOf(StoreRequestError);
      // The removals of leftover temporary files (the queue's and the engine's) failed first: reported as store errors too, not raw ones.
      expect(warned.length).toBeGreaterThan(0);
      for (const w of warned) expect((w as { err?: unknown }).err).toBeInstanceOf(StoreRequestError);
    }
  });

  it("a root this process may not enter fails put, get, listing and Queue.open with a non-retryable error saying permission was denied", {
    timeout: loadLimitTimeout(REFUSED_MS),
  }, async () => {
    const base = await freshDir();
    const locked = join(base, "locked");
    await mkdir(locked);
    await chmod(locked, 0o000);
    // Root ignores permissions: then the attempts run as the unprivileged user `nobody`.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) await chmod(base, 0o755);
    const scenario = ChildScenario.stretchedByLoad(REFUSED_MS);
    const child = scenario.track("refused", startScript(refusedScript, [locked], asRoot ? { uid: 65534, gid: 65534 } : {}));
    let exit: Awaited<typeof child.exited>;
    try {
      // Bounded by the child's own work (about 1.5 s of CPU), not by how long the shared cores take to run it.
      exit = await scenario.exit("refused", child, { cpuMs: REFUSED_CPU_MS, of: child });
    } finally {
      await scenario.stop();
      await chmod(locked, 0o700);
    }
    expect(exit.code, child.stderr()).toBe(0);
    const results = child.lines
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { what: string; outcome: string; code?: string; retryable?: boolean; message: string });
    expect(results.map((r) => r.what)).toEqual(["put", "get", "list", "queue"]);
    for (const r of results) {
      expect(r, r.what).toMatchObject({ outcome: "StoreRequestError", code: "STORE_REQUEST_REFUSED", retryable: false });
      expect(r.message).toMatch(/EACCES.*permission denied; give the user this process runs as read, write and search/);
    }
  });
});

describe("LocalStore on a path too long", () => {
  it("a root with a name over 255 bytes fails put, get and listing with a ValidationError naming the store's directory, not a key", async () => {
    const root = join(await freshDir(), "é".repeat(130));
    const store = new LocalStore(root);
    for (const act of [() => store.put("k", enc("1")), () => store.get("k"), async () => (await store.list("")[Symbol.asyncIterator]().next()).done]) {
      const err = (await act().catch((e: unknown) => e)) as ValidationError;
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.message).toMatch(/store's directory .* has a name of 260 bytes in its path, longer than the 255/);
    }
  });
});
