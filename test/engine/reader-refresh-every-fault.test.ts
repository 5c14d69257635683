/**
 * @module An `EngineReader` whose refresh fails at each of its store calls
 * in turn (a manifest listing, a WAL object's read, a segment's read after
 * a checkpoint replaced the state), while its writer commits, checkpoints
 * and compacts: after every refresh, failed or not, the reader holds the
 * state of one whole commit, never older than the one it held before, and
 * a refresh with no fault reaches the writer's last commit.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch } from "taquba";
import { failWhen } from "../support/failing-store.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const ROUNDS = 6;
const COMMITS_PER_ROUND = 6;
/** Far more store calls than one refresh makes: a refresh that still meets its fault past this is stuck. */
const MOST_CALLS = 400;

/** Commit `c` (from 0) puts `k/{c}` and sets `last` to `c`, and deletes `k/{c - 3}`: its state is `last` and the keys of commits `c - 2 .. c`. */
function commitOf(c: number): WriteBatch {
  const b = new WriteBatch().put(`k/${String(c).padStart(4, "0")}`, enc(`value of ${c}`)).put("last", enc(String(c)));
  return c >= 3 ? b.delete(`k/${String(c - 3).padStart(4, "0")}`) : b;
}

/** The commit whose whole state `reader` holds, or a description of a state no commit made. */
function heldCommit(reader: EngineReader): number | string {
  const lastBytes = reader.get("last");
  const last = lastBytes === undefined ? -1 : Number(dec(lastBytes));
  const keys = [...reader.scan({ prefix: "k/" })].map(([k, v]) => `${k}=${dec(v)}`);
  const expected: string[] = [];
  for (let c = Math.max(0, last - 2); c <= last; c++) expected.push(`k/${String(c).padStart(4, "0")}=value of ${c}`);
  return keys.join() === expected.join() ? last : `"last" = ${last} beside ${keys.join(", ")}`;
}

describe("an EngineReader's refresh failing at each store call in turn", () => {
  it("holds one whole commit after every refresh, never an older one, and a refresh with no fault catches up", async () => {
    const store = new MemoryStore();
    const writer = await Engine.open(store, { checkpointWalObjects: 8, maxSegmentRuns: 2, flushIntervalMs: 0 });
    let calls = 0;
    let failAt = Number.POSITIVE_INFINITY;
    const faulty = failWhen(store, (call, key) => (++calls === failAt ? new Error(`injected: ${call} of ${key} failed`) : undefined));
    await writer.commit(commitOf(0));
    const reader = await EngineReader.open(faulty, { retry: { attempts: 1 } });
    try {
      let committed = 0;
      let held = heldCommit(reader);
      expect(held).toBe(0);
      const faultsMet: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < COMMITS_PER_ROUND; i++) await writer.commit(commitOf(++committed));
        await writer.flush();
        for (let k = 1; ; k++) {
          expect(k, "a refresh that still meets its fault after this many calls").toBeLessThan(MOST_CALLS);
          // A fault at call k, then one sooner: a refresh that went on from where an earlier one began
          // would apply that one's commits again, and stop among them.
          let reached = false;
          for (const at of [k, Math.ceil(k / 2)]) {
            calls = 0;
            failAt = at;
            const failed = await reader.refresh().then(
              () => undefined,
              (e: unknown) => e,
            );
            failAt = Number.POSITIVE_INFINITY;
            const now = heldCommit(reader);
            if (typeof now === "string") expect.fail(`round ${round}, fault at call ${at} (after one at ${k}): the reader holds ${now}`);
            expect(now, `round ${round}, fault at call ${at}: went back`).toBeGreaterThanOrEqual(held as number);
            held = now;
            if (failed !== undefined) faultsMet.push(`${round}:${at}`);
            if (at === k) reached = calls >= k;
          }
          if (!reached) break;
        }
        // The last refresh met no fault: it reached the writer's last commit.
        expect(held, `round ${round}`).toBe(committed);
      }
      // Every round's refreshes met faults at several calls: the test reached the reads it means to break.
      expect(faultsMet.length).toBeGreaterThanOrEqual(2 * ROUNDS);
      expect(writer.stats.checkpoints).toBeGreaterThan(0);
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});
