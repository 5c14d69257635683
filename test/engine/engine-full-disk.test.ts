/**
 * @module The engine over a LocalStore whose file system fills up (a real
 * tmpfs, mounted when the tests run as root on Linux; skipped elsewhere).
 * The commit whose WAL object finds no space rejects with a typed error
 * saying the file system is full, every later commit and flush rejects
 * too (none hangs), and once space is freed a reopen holds every commit
 * acknowledged before. An open on a full file system is refused the same
 * way and leaves the store as it was.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClosedError, Engine, LocalStore, StoreUnavailableError, WriteBatch } from "taquba";
import { removeSmallFileSystem, smallFileSystem } from "../support/small-file-system.js";
import { fillDisk } from "../support/fill-disk.js";

const mounted = smallFileSystem("512k");

afterAll(() => removeSmallFileSystem(mounted));

const retry = { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 };
const value = (i: number) => new Uint8Array(3000).fill(i & 0xff);

describe.skipIf(mounted === undefined)("engine on a full file system (a tmpfs; needs root on Linux)", () => {
  it("rejects the commit that finds no space saying so, then every commit and flush, and a reopen after freeing space holds every acknowledged commit", async () => {
    const root = join(mounted!, "full-while-open");
    const engine = await Engine.open(new LocalStore(root), { retry, checkpointWalBytes: 0, checkpointWalObjects: 0 });
    const fillers = fillDisk(mounted!, 64 * 1024);
    const acked: number[] = [];
    let refused: unknown;
    for (let i = 0; i < 1000 && refused === undefined; i++) {
      try {
        await engine.commit(new WriteBatch().put(`k/${i}`, value(i)));
        acked.push(i);
      } catch (err) {
        refused = err;
      }
    }
    expect(refused, "a commit found the file system full").toBeInstanceOf(ClosedError);
    const err = refused as ClosedError;
    expect(err.cause).toBeInstanceOf(StoreUnavailableError);
    expect(err.message).toContain("is full: free space on it");
    // Stopped for good: later commits and flushes reject at once with the same reason, close resolves.
    await expect(engine.commit(new WriteBatch().put("after", value(1)))).rejects.toBeInstanceOf(ClosedError);
    await expect(engine.flush()).rejects.toBeInstanceOf(ClosedError);
    await engine.close();
    // No temporary file of the failed put is left beside the objects.
    const temps = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((n) => n.includes("%tmp."));
    expect(temps).toEqual([]);

    for (const f of fillers) rmSync(f);
    const reopened = await Engine.open(new LocalStore(root), { retry });
    for (const i of acked) expect(reopened.get(`k/${i}`), `acknowledged k/${i}`).toEqual(value(i));
    expect(reopened.get("after")).toBeUndefined();
    // It writes again.
    await reopened.commit(new WriteBatch().put("again", value(2)));
    await reopened.close();
  });

  it("refuses an open on a full file system saying so, and the store opens whole once space is freed", async () => {
    const root = join(mounted!, "full-at-open");
    const first = await Engine.open(new LocalStore(root), { retry });
    for (let i = 0; i < 5; i++) await first.commit(new WriteBatch().put(`k/${i}`, value(i)));
    await first.close();
    // Small fillers last, so not even a manifest fits.
    const fillers = [...fillDisk(mounted!, 64 * 1024), ...fillDisk(mounted!, 1024), ...fillDisk(mounted!, 64)];
    let refused: unknown;
    try {
      const e = await Engine.open(new LocalStore(root), { retry });
      await e.close();
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(StoreUnavailableError);
    expect((refused as Error).message).toContain("is full: free space on it");
    for (const f of fillers) rmSync(f);
    const reopened = await Engine.open(new LocalStore(root), { retry });
    for (let i = 0; i < 5; i++) expect(reopened.get(`k/${i}`)).toEqual(value(i));
    await reopened.close();
  });
});
