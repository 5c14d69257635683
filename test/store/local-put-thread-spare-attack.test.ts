/**
 * @module Attacks on the put thread's file made ahead (see
 * local-put-thread-spare.test.ts): between two puts it sits under a
 * temporary name for as long as the caller waits, so another program can do
 * more than write into it. Replaced under its name by another file (removed
 * and made again, or a file renamed over it, as a tool that rewrites files
 * whole does), the put that meant to use it must store its own bytes or fail
 * saying so, never store the other file's. Two stores over one directory,
 * and a directory emptied under the file, end the same way.
 */
import { renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore, StoreUnavailableError } from "taquba";
import { sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-put-spare-attack-");
const body = (n: number, fill: number) => new Uint8Array(n).fill(fill);

async function tempsIn(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [])).filter((n) => n.startsWith("%tmp.")).sort();
}

async function keys(store: LocalStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) out.push(o.key);
  return out;
}

/** A store with two puts made into wal/, so the thread holds the next put's file: its path. */
async function withSpare(root: string): Promise<{ store: LocalStore; spare: string }> {
  const store = new LocalStore(root);
  await store.put("wal/1", body(4, 1), { ifNoneMatch: "*" });
  await store.put("wal/2", body(4, 2), { ifNoneMatch: "*" });
  await sharedPutThread().tidied();
  const [name] = await tempsIn(join(root, "wal%2F"));
  if (name === undefined) throw new Error("no file made ahead");
  return { store, spare: join(root, "wal%2F", name) };
}

/** The put of wal/3 ends with its own bytes stored, or failing with a retryable error and no object: never other bytes. */
async function expectOwnBytesOrRefusal(store: LocalStore, mine: Uint8Array): Promise<void> {
  const outcome = await store.put("wal/3", mine, { ifNoneMatch: "*" }).then(
    (r) => r,
    (e: unknown) => e,
  );
  const stored = await store.get("wal/3");
  if (outcome instanceof Error) {
    expect(outcome).toBeInstanceOf(StoreUnavailableError);
    expect(outcome.message).toMatch(/wal\/3.*the temporary file .* was replaced by another program's file between puts/s);
    expect(stored).toBeNull();
    // Tried again, it lands.
    await store.put("wal/3", mine, { ifNoneMatch: "*" });
    expect((await store.get("wal/3"))!.body).toEqual(mine);
  } else {
    expect(stored!.body).toEqual(mine);
    expect(stored!.etag).toBe((outcome as { etag: string }).etag);
  }
}

describe.skipIf(process.platform === "win32")("the put thread's file made ahead, attacked", () => {
  it("removed and made again under its name with other bytes of the put's length: the put's own bytes or a refusal", async () => {
    const { store, spare } = await withSpare(await tempDir());
    const before = statSync(spare).ino;
    unlinkSync(spare);
    writeFileSync(spare, body(8, 0xee));
    expect(statSync(spare).ino).not.toBe(before);
    await expectOwnBytesOrRefusal(store, body(8, 3));
    expect(await keys(store)).toEqual(["wal/1", "wal/2", "wal/3"]);
  });

  it("with a file renamed over it (a whole-file rewrite): the put's own bytes or a refusal", async () => {
    const root = await tempDir();
    const { store, spare } = await withSpare(root);
    const elsewhere = join(root, "wal%2F", "rewritten");
    writeFileSync(elsewhere, body(8, 0xdd));
    renameSync(elsewhere, spare);
    await expectOwnBytesOrRefusal(store, body(8, 3));
    expect(await keys(store)).toEqual(["wal/1", "wal/2", "wal/3"]);
  });

  it("two stores over one directory, each holding a file made ahead: every object holds its own put's bytes", async () => {
    const root = await tempDir();
    const a = new LocalStore(root);
    const b = new LocalStore(root);
    const puts: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      // Alternating stores, one directory: each store's next file is its own temporary name.
      const store = i % 2 === 0 ? a : b;
      puts.push(store.put(`wal/${String(i).padStart(2, "0")}`, body(16 + i, i), { ifNoneMatch: "*" }));
      if (i % 5 === 4) await Promise.all(puts.splice(0));
    }
    await Promise.all(puts);
    for (let i = 0; i < 40; i++) expect((await a.get(`wal/${String(i).padStart(2, "0")}`))!.body).toEqual(body(16 + i, i));
    expect(await keys(b)).toHaveLength(40);
  });
});
