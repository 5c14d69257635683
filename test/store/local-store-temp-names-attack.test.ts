/**
 * @module LocalStore's temporary names (the pid, a per-store counter and a
 * random part drawn once per store) attacked: two stores of one process
 * over one directory putting the same keys at once, racing creates, and one
 * store removing leftovers while the other's puts are in flight. No put
 * fails on another's temporary name, exactly one create wins, every object
 * read is whole and one of those written, and only a dead process's
 * leftovers are removed.
 */
import { spawnSync } from "node:child_process";
import { readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore, PreconditionFailedError } from "taquba";
import { sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { useTempDirs } from "../support/temp-dirs.js";

const freshDir = useTempDirs("temp-names-");

/** `n` bytes that say which writer wrote them (every byte `tag`), so a torn or mixed object shows. */
const body = (tag: number, n: number) => new Uint8Array(n).fill(tag);

/** The temporary files left anywhere under `dir`. */
async function temps(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).filter((p) => path.basename(p).startsWith("%tmp."));
}

/** A pid no process runs under now: a child's, after it exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

describe("LocalStore temporary names across stores of one process", () => {
  it("two stores over one directory put one key 40 times each at once: every put lands, the object is whole, nothing is left", async () => {
    const dir = await freshDir();
    const a = new LocalStore(dir);
    const b = new LocalStore(dir);
    const puts: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      // Tags 1..40 from one store, 101..140 from the other; sizes differ so a mix of two shows in the length too.
      puts.push(a.put("d/same", body(1 + i, 1000 + i)));
      puts.push(b.put("d/same", body(101 + i, 2000 + i)));
      puts.push(a.put(`d/a${i}`, body(1, 10)), b.put(`d/b${i}`, body(2, 10)));
    }
    await Promise.all(puts);
    for (const s of [a, b]) {
      const got = (await s.get("d/same"))!.body;
      const tag = got[0]!;
      expect(tag <= 40 ? 1000 + tag - 1 : 2000 + tag - 101).toBe(got.length);
      expect(got.every((x) => x === tag)).toBe(true);
    }
    const listed: string[] = [];
    for await (const o of b.list("d/")) listed.push(o.key);
    expect(listed).toHaveLength(81);
    expect(await temps(dir)).toEqual([]);
  });

  it("creates of one key racing from two stores over one directory: exactly one wins, the others fail with PreconditionFailedError", async () => {
    const dir = await freshDir();
    const stores = [new LocalStore(dir), new LocalStore(dir), new LocalStore(dir)];
    for (let round = 0; round < 10; round++) {
      const outcomes = await Promise.allSettled(
        stores.flatMap((s, i) => [0, 1, 2].map((j) => s.put(`c/k${round}`, body(10 * i + j + 1, 64), { ifNoneMatch: "*" }))),
      );
      const won = outcomes.filter((o) => o.status === "fulfilled");
      expect(won).toHaveLength(1);
      for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(PreconditionFailedError);
      const got = (await stores[2]!.get(`c/k${round}`))!.body;
      expect(got).toHaveLength(64);
      expect(got.every((x) => x === got[0])).toBe(true);
    }
    // At most the put thread's file made ahead for a next put into c/ (one thread for the three stores); none once it ends.
    expect((await temps(dir)).filter((p) => !p.startsWith("c%2F/"))).toEqual([]);
    expect((await temps(dir)).length).toBeLessThanOrEqual(1);
    await sharedPutThread().close();
    expect(await temps(dir)).toEqual([]);
  });

  it("one store removing leftovers while the other's puts are in flight removes only a dead process's temporary files", async () => {
    const dir = await freshDir();
    const writer = new LocalStore(dir);
    const sweeper = new LocalStore(dir);
    await writer.put("w/warm", body(1, 1));
    // A leftover of a process that died mid-put, and one of a live process (this one) that is no put of either store.
    const dead = `%tmp.${deadPid()}.1.abcdefabcdef`;
    const live = `%tmp.${process.pid}.999999.000000000000`;
    await writeFile(path.join(dir, "w%2F", dead), "half");
    await writeFile(path.join(dir, "w%2F", live), "in flight elsewhere");
    const puts: Promise<unknown>[] = [];
    let removed = 0;
    for (let i = 0; i < 12; i++) {
      puts.push(writer.put(`w/k${i}`, body(i + 1, 512 * 1024)));
      removed += await sweeper.removeLeftovers("w/");
    }
    await Promise.all(puts);
    removed += await sweeper.removeLeftovers("w/");
    expect(removed).toBe(1);
    expect((await temps(dir)).map((p) => path.basename(p))).toEqual([live]);
    for (let i = 0; i < 12; i++) {
      const got = (await sweeper.get(`w/k${i}`))!.body;
      expect(got).toHaveLength(512 * 1024);
      expect(got.every((x) => x === i + 1)).toBe(true);
    }
  });
});
