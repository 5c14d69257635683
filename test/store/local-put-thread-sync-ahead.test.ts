/**
 * @module The put thread's file made ahead is also fsynced ahead
 * (store/local-put-worker.ts, `SYNC_AHEAD_POLICY`) while the gaps between an
 * answer and the next request hold the tidy-up and two syncs, so not for a
 * request made while the tidy-up still ran. The puts themselves are
 * unchanged: what they store, and that a file made ahead is written into.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PutThread } from "../../runtime/store/local-put-thread.js";
import { SYNC_AHEAD_POLICY } from "../../runtime/store/local-put-worker.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-put-sync-ahead-");
const bytes = (...b: number[]) => new Uint8Array(b);

/** The policy the thread runs, built from the same source text. */
const policy = new Function(`${SYNC_AHEAD_POLICY}; return { nextSyncAhead, decayedSyncNs };`)() as {
  nextSyncAhead(gapNs: number, tidyNs: number, syncNs: number): boolean;
  decayedSyncNs(syncNs: number): number;
};

/** A thread of its own (its policy starts afresh) and the puts of a WAL-like stream into `dir`, each asking for the next one's file. */
function stream(dir: string) {
  const thread = new PutThread();
  const temp = (n: number) => join(dir, `%tmp.${process.pid}.${n}.sync`);
  let n = 0;
  return {
    thread,
    /** Puts object `n` (its bytes: n, n), writing into the file made for it from the second put on. */
    put: () => {
      n++;
      return thread.put(temp(n), join(dir, String(n)), dir, bytes(n, n), true, temp(n + 1));
    },
    spare: () => temp(n + 1),
  };
}

describe.skipIf(process.platform === "win32")("the put thread's file fsynced ahead", () => {
  it("is fsynced by the tidy-up after a put with time to spare, and the next put writes into it", async () => {
    const dir = await tempDir();
    const s = stream(dir);
    try {
      // A fresh thread's first request has had all the time it needs since any answer.
      await s.put();
      await s.thread.tidied();
      expect(s.thread.syncedAhead, "the file made ahead after the first answer was fsynced").toBe(1);
      const spareInode = statSync(s.spare()).ino;
      await s.put();
      await s.thread.tidied();
      expect(statSync(join(dir, "2")).ino, "the put wrote into the file fsynced for it").toBe(spareInode);
      for (let i = 1; i <= 2; i++) expect(new Uint8Array(readFileSync(join(dir, String(i))))).toEqual(bytes(i, i));
    } finally {
      await s.thread.close();
    }
  });

  it("stops after a put made while a tidy-up ran, so puts in a row do not wait for syncs ahead", async () => {
    const dir = await tempDir();
    const s = stream(dir);
    try {
      await s.put();
      await s.thread.tidied();
      expect(s.thread.syncedAhead, "a request after the tidy-up: synced ahead").toBe(1);
      // Each put made as soon as the last one answered, while its tidy-up (with a sync) may still run.
      for (let i = 2; i <= 41; i++) await s.put();
      await s.thread.tidied();
      expect(s.thread.syncedAhead - 1, "syncs ahead among 40 puts in a row (40 if none stopped them)").toBeLessThan(40);
      for (let i = 1; i <= 41; i++) expect(new Uint8Array(readFileSync(join(dir, String(i))))).toEqual(bytes(i, i));
    } finally {
      await s.thread.close();
    }
  });

  it("syncs while the gap after an answer holds the tidy-up and two syncs, and tries a long sync again after a few puts", () => {
    const { nextSyncAhead, decayedSyncNs } = policy;
    expect(nextSyncAhead(40_000, 50_000, 0), "a request picked up before a tidy-up's time: no sync").toBe(false);
    expect(nextSyncAhead(150_000, 50_000, 100_000), "one made during a tidy-up with a sync, picked up at its end: no sync").toBe(false);
    expect(nextSyncAhead(249_999, 50_000, 100_000), "a gap short of the tidy-up and two syncs: no sync").toBe(false);
    expect(nextSyncAhead(250_000, 50_000, 100_000), "a gap that holds them: sync").toBe(true);
    expect(nextSyncAhead(10_000_000, 0, 0), "nothing measured yet: sync").toBe(true);
    let syncNs = 10_000_000;
    let puts = 0;
    while (!nextSyncAhead(2_000_000, 100_000, syncNs)) {
      syncNs = decayedSyncNs(syncNs);
      puts++;
    }
    // A 10 ms sync against 2 ms gaps: tried again after about a dozen puts without a sync, not never.
    expect(puts).toBeGreaterThan(5);
    expect(puts).toBeLessThan(20);
  });
});
