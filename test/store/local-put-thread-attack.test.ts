/**
 * @module Attacks on LocalStore's put thread (store/local-put-thread.ts)
 * from the store's side: stores of one process sharing the thread over one
 * directory and over several, racing create-if-absent puts of the same
 * keys; bodies around the thread's 256 KiB bound; odd keys, and paths at
 * the file system's length limit with the largest body (the paths ride
 * behind the body in the shared buffer). Each compares the thread with the
 * thread pool (`putThread: false`): same outcomes, whole objects, no
 * temporary file left.
 */
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore, PreconditionFailedError } from "taquba";
import { PUT_THREAD_MAX_BODY, sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-put-thread-attack-");

/** Temporary files anywhere under `dir`. */
async function tempsUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).filter((p) => p.split("/").pop()!.startsWith("%tmp."));
}

/** A body of `n` bytes that says which store and key wrote it (its first bytes) and is otherwise seeded noise. */
function bodyOf(tag: string, n: number, random: () => number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 997) out[i] = Math.floor(random() * 256);
  out.set(new TextEncoder().encode(tag).subarray(0, n));
  return out;
}

/** What a put gave, as one comparable line (the store's directory taken out of messages). */
async function outcomeOf(p: Promise<unknown>, root: string): Promise<string> {
  return p.then(
    () => "ok",
    (e: unknown) => `${(e as Error).name}: ${(e as Error).message.split(root).join("<root>")}`,
  );
}

describe("LocalStore's put thread under attack", () => {
  it("stores sharing one directory race create-if-absent puts of the same keys: one winner each, its bytes read back, no temporary file", async () => {
    const rnd = testRandom("put-thread-race");
    const [one, two] = [await tempDir(), await tempDir()];
    // Two stores with the thread and one without over `one`, one with the thread over `two`.
    const racers = [new LocalStore(one), new LocalStore(one), new LocalStore(one, { putThread: false })];
    const apart = new LocalStore(two);
    const sizes = [0, 1, PUT_THREAD_MAX_BODY - 1, PUT_THREAD_MAX_BODY, PUT_THREAD_MAX_BODY + 1, 4096];
    for (let round = 0; round < 12; round++) {
      const key = `wal/${round % 3}/k${round}`;
      const bodies = racers.map((_, i) => bodyOf(`s${i}-${key}`, sizes[rnd.int(sizes.length)]!, rnd.random));
      const own = bodyOf(`apart-${key}`, sizes[rnd.int(sizes.length)]!, rnd.random);
      const results = await Promise.allSettled([
        ...racers.map((s, i) => s.put(key, bodies[i]!, { ifNoneMatch: "*" })),
        apart.put(key, own, { ifNoneMatch: "*" }),
      ]);
      expect(results[3]!.status, "a store over another directory races nobody").toBe("fulfilled");
      const won = results.slice(0, 3).flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
      expect(won, `exactly one winner for ${key}`).toHaveLength(1);
      for (const r of results.slice(0, 3)) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(PreconditionFailedError);
      const winner = won[0]!;
      for (const reader of racers) {
        const got = await reader.get(key);
        expect(Buffer.from(got!.body).equals(Buffer.from(bodies[winner]!)), `${key} holds the winner's bytes`).toBe(true);
        expect(got!.etag).toBe((results[winner] as PromiseFulfilledResult<{ etag: string }>).value.etag);
      }
      expect(Buffer.from((await apart.get(key))!.body).equals(Buffer.from(own))).toBe(true);
    }
    // A put may have left the thread's file made ahead for a next put into its directory (an empty temporary name,
    // never listed): it goes when the thread stops, which a later put starts again. Anything else left is a defect.
    await sharedPutThread().close();
    expect([...(await tempsUnder(one)), ...(await tempsUnder(two))]).toEqual([]);
  });

  it("odd keys (unicode, escapes, names that look like temporary files, a 255-byte file name and one byte more) give the pool's outcomes, with the largest body", async () => {
    const rnd = testRandom("put-thread-odd-keys");
    const keys = [
      "wal/ünïcödé/😀",
      "wal/%tmp.1.2.abc",
      "wal/.../x",
      "wal/a./b.",
      "wal/CON",
      "wal/\u202Eright-to-left",
      `wal/${"a".repeat(255)}`,
      `wal/${"a".repeat(256)}`,
      `wal/${"É".repeat(42)}`,
      `wal/${"É".repeat(43)}`,
      `${"d/".repeat(200)}deep`,
    ];
    const answers = async (putThread: boolean) => {
      const root = join(await tempDir(), "store");
      const store = new LocalStore(root, { putThread });
      const out: string[] = [];
      for (const [i, key] of keys.entries()) {
        const body = bodyOf(key, i % 2 === 0 ? PUT_THREAD_MAX_BODY : PUT_THREAD_MAX_BODY - 1, rnd.random);
        const answer = await outcomeOf(store.put(key, body, { ifNoneMatch: "*" }), root);
        out.push(`${key.slice(0, 40)}: ${answer}`);
        if (answer !== "ok") continue;
        expect(Buffer.from((await store.get(key))!.body).equals(Buffer.from(body)), key).toBe(true);
        expect(await outcomeOf(store.put(key, body, { ifNoneMatch: "*" }), root)).toMatch(/^PreconditionFailedError/);
      }
      const listed: string[] = [];
      for await (const o of store.list("")) listed.push(o.key);
      expect(listed.sort()).toEqual(keys.filter((_, i) => out[i]!.endsWith(": ok")).sort());
      expect(await tempsUnder(root)).toEqual([]);
      return out;
    };
    const pool = await answers(false);
    expect(pool.filter((a) => !a.endsWith(": ok")).length, "the over-long names are refused").toBe(2);
    expect(await answers(true)).toEqual(pool);
  });

  it("paths at the file system's length limit with a 256 KiB body: the pool's outcomes, never an object under a cut path", async () => {
    const probe = async (putThread: boolean) => {
      const base = await tempDir();
      // A store directory whose path leaves about 4,096 bytes minus a little for the key's path: the sweep below crosses the limit.
      const levels = Array.from({ length: 15 }, (_, i) => `${String(i).padStart(2, "0")}${"r".repeat(250)}`);
      // The last level sized so that 150 bytes are left below the store's directory.
      const last = 4095 - 150 - 1 - Buffer.byteLength(join(base, ...levels)) - 1;
      const longDir = join(base, ...levels, "l".repeat(last));
      await mkdir(longDir, { recursive: true });
      const store = new LocalStore(longDir, { putThread });
      const room = 4095 - Buffer.byteLength(longDir) - 1;
      const out: string[] = [];
      for (let extra = -70; extra <= 4; extra += 2) {
        // One directory level (name + "%2F") and an object name that together reach `room + extra` bytes.
        const dirName = "w";
        const nameLength = room + extra - (dirName.length + 3 + 1);
        if (nameLength < 1 || nameLength > 255) continue;
        const key = `${dirName}/${"n".repeat(nameLength)}`;
        const body = bodyOf(key, PUT_THREAD_MAX_BODY, Math.random);
        const answer = await outcomeOf(store.put(key, body, { ifNoneMatch: "*" }), longDir);
        out.push(`${extra}: ${answer}`);
        if (answer === "ok") expect(Buffer.from((await store.get(key))!.body).equals(Buffer.from(body))).toBe(true);
      }
      expect(await tempsUnder(longDir)).toEqual([]);
      return out;
    };
    const pool = await probe(false);
    expect(pool.some((a) => a.endsWith(": ok")) && pool.some((a) => !a.endsWith(": ok")), "the sweep crosses the limit").toBe(true);
    expect(await probe(true)).toEqual(pool);
  });
});
