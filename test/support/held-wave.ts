/**
 * @module A wave of commits in one held WAL object, for the tests of how
 * the engine releases a stored object's commits (at once or by groups).
 */
import { type Engine, WriteBatch } from "taquba";
import { RELEASE_GROUP } from "../../runtime/engine/wal-writer.js";
import type { GatedStore } from "./gated-store.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** Commits in a wave: two release groups and some. */
export const WAVE = 2 * RELEASE_GROUP + 10;

/**
 * WAVE commits in one held WAL object, each continuation noting how many WAL puts were on their way to the
 * store when it ran, then committing again; resolves once that object's put is held.
 */
export async function heldWave(engine: Engine, gated: GatedStore): Promise<{ commits: Promise<void>[]; sentWhenRun: number[]; followUps: Promise<void>[] }> {
  const sentWhenRun: number[] = [];
  const followUps: Promise<void>[] = [];
  const commits = Array.from({ length: WAVE }, (_, i) =>
    engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i)))).then(() => {
      sentWhenRun.push(gated.held.length);
      followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc(String(i)))));
    }),
  );
  await gated.waitHeld(1);
  return { commits, sentWhenRun, followUps };
}
