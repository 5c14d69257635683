/**
 * @module The removal of test directories: a LocalStore still putting into
 * its directory while the test's cleanup removes it (the removal meets
 * files made after it listed a directory, ENOTEMPTY) is tried again until
 * it lands, and a directory that cannot be removed fails after a bounded
 * number of attempts with a message naming it, rather than being retried
 * without end or let be.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, StoreRequestError, StoreUnavailableError } from "taquba";
import { removeTempDir } from "./temp-dirs.js";

const made: string[] = [];
const freshDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), "taquba-temp-dirs-"));
  made.push(dir);
  return dir;
};
afterEach(async () => {
  for (const d of made.splice(0)) {
    setImmutable(join(d, "held"), false);
    await rm(d, { recursive: true, force: true });
  }
});

/** Sets or clears the immutable attribute (chattr), false where the file system or the user cannot. */
function setImmutable(path: string, on: boolean): boolean {
  if (!existsSync(path)) return false;
  try {
    execFileSync("chattr", [on ? "+i" : "-i", path], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A directory holding `held/`, made immutable (its subdirectory cannot be removed, EPERM), or undefined where that cannot be made. */
async function heldDir(): Promise<string | undefined> {
  const dir = await freshDir();
  await mkdir(join(dir, "held", "sub"), { recursive: true });
  return setImmutable(join(dir, "held"), true) ? dir : undefined;
}

describe("removing a test directory", () => {
  /** Four put loops into `dir`, as an engine's writer makes: each ends at its first failure, or once `stop` is called. */
  async function putLoops(dir: string) {
    const store = new LocalStore(dir);
    await store.put("wal/first", new Uint8Array(10));
    let stopped = false;
    const ends: unknown[] = [];
    const loops = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; !stopped; i++) {
        try {
          await store.put(`wal/${w}-${i}`, new Uint8Array(100), { ifNoneMatch: "*" });
        } catch (err) {
          ends.push(err);
          return;
        }
      }
    });
    // Puts in flight from here on.
    await store.put("wal/second", new Uint8Array(10), { ifNoneMatch: "*" });
    return {
      ends,
      stop: () => {
        stopped = true;
        return Promise.all(loops);
      },
    };
  }

  it("while a LocalStore's last puts are in flight lands", async () => {
    // Tried once, the removal failed with ENOTEMPTY in 8 rounds of 40 (a put's file or the put thread's next file
    // made after the removal listed the directory).
    for (let round = 0; round < 20; round++) {
      const dir = await freshDir();
      const puts = await putLoops(dir);
      const ended = puts.stop();
      await removeTempDir(dir);
      expect(existsSync(dir)).toBe(false);
      await ended;
      // Those that met the removal failed saying so; the store did not make its own directory again.
      for (const e of puts.ends) expect(e instanceof StoreRequestError || e instanceof StoreUnavailableError).toBe(true);
      expect(existsSync(dir)).toBe(false);
    }
  });

  it("that cannot be removed fails after its attempts, naming the directory; one freed between attempts lands", async (ctx) => {
    const dir = await heldDir();
    if (dir === undefined) ctx.skip();
    const stuck = dir as string;
    const failures: string[] = [];
    const err = await removeTempDir(stuck, { attempts: 3, firstPauseMs: 1, afterFailure: (code) => void failures.push(code) }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain(`could not remove the test directory ${stuck} (EPERM, 3 attempts)`);
    expect(err?.message).toContain("close its stores and stop its workers");
    expect(failures).toEqual(["EPERM", "EPERM"]);
    expect(existsSync(join(stuck, "held", "sub"))).toBe(true);
    // Freed after the first failed attempt (as a writer finishing its last call): the second attempt lands.
    await removeTempDir(stuck, { attempts: 3, firstPauseMs: 1, afterFailure: () => void setImmutable(join(stuck, "held"), false) });
    expect(existsSync(stuck)).toBe(false);
  });

  it("tried once fails at once, and a directory already gone is no failure", async (ctx) => {
    const dir = await heldDir();
    if (dir === undefined) ctx.skip();
    const err = await removeTempDir(dir as string, { attempts: 1 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain("(EPERM, 1 attempt)");
    await expect(removeTempDir(join(tmpdir(), "taquba-temp-dirs-never-made"))).resolves.toBeUndefined();
  });
});
