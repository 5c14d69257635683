/**
 * @module LocalStore's second put thread against a file system that fills
 * up (a real tmpfs, mounted when the tests run as root on Linux; skipped
 * elsewhere) while three WAL cohorts keep both put threads busy. Every
 * commit settles (none hangs): acknowledged, or refused with a typed error
 * saying the file system is full. Once space is freed, a reopen holds every
 * acknowledged commit and writes again. (A read-only remount is refused
 * while a put thread holds its file made ahead open for writing.)
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClosedError, Engine, LocalStore, StoreUnavailableError, WriteBatch } from "taquba";
import { removeSmallFileSystem, smallFileSystem } from "../support/small-file-system.js";
import { fillDisk } from "../support/fill-disk.js";

const mounted = smallFileSystem("768k");

afterAll(() => removeSmallFileSystem(mounted));

const retry = { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 };
const value = (i: number) => new Uint8Array(2000).fill(i & 0xff);
/** Commits sent at once: more than three cohorts, so both put threads have a WAL put in flight. */
const IN_FLIGHT = 12;

function openEngine(root: string): Promise<Engine> {
  return Engine.open(new LocalStore(root, { secondPutThread: true }), { retry, walCohorts: 3, checkpointWalBytes: 0, checkpointWalObjects: 0 });
}

/**
 * Commits rounds of `IN_FLIGHT` at once until one is refused, calling
 * `midway` after the first rounds; every commit of the
 * round that was refused is settled before this returns. Returns the
 * acknowledged keys and the refusals.
 */
async function commitUntilRefused(engine: Engine, midway: () => void): Promise<{ acked: number[]; refused: unknown[] }> {
  const acked: number[] = [];
  const refused: unknown[] = [];
  for (let round = 0; round < 200 && refused.length === 0; round++) {
    if (round === 3) midway();
    const commits = Array.from({ length: IN_FLIGHT }, (_, j) => {
      const i = round * IN_FLIGHT + j;
      return engine.commit(new WriteBatch().put(`k/${i}`, value(i))).then(
        () => acked.push(i),
        (err: unknown) => refused.push(err),
      );
    });
    await Promise.all(commits);
  }
  return { acked, refused };
}

/** Every acknowledged commit is there after a reopen, which writes again. */
async function expectAcknowledgedHeld(root: string, acked: readonly number[]): Promise<void> {
  const reopened = await openEngine(root);
  for (const i of acked) expect(reopened.get(`k/${i}`), `acknowledged k/${i}`).toEqual(value(i));
  await reopened.commit(new WriteBatch().put("again", value(7)));
  await reopened.close();
  const again = await openEngine(root);
  expect(again.get("again")).toEqual(value(7));
  await again.close();
}

describe.skipIf(mounted === undefined)("the second put thread on a file system that fills up (a tmpfs; needs root on Linux)", () => {
  it("filled up with WAL puts on both threads: every commit settles, refused ones saying the disk is full, and a reopen holds every acknowledged one", async () => {
    const root = join(mounted!, "full");
    const engine = await openEngine(root);
    let fillers: string[] = [];
    const { acked, refused } = await commitUntilRefused(engine, () => {
      fillers = fillDisk(mounted!, 32 * 1024);
    });
    expect(acked.length).toBeGreaterThan(0);
    expect(refused.length, "a commit found the file system full").toBeGreaterThan(0);
    for (const err of refused) {
      expect(err).toBeInstanceOf(ClosedError);
      expect((err as ClosedError).cause).toBeInstanceOf(StoreUnavailableError);
      expect((err as Error).message).toContain("is full: free space on it");
    }
    await expect(engine.commit(new WriteBatch().put("after", value(1)))).rejects.toBeInstanceOf(ClosedError);
    await engine.close();
    for (const f of fillers) rmSync(f);
    await expectAcknowledgedHeld(root, acked);
  });
});
