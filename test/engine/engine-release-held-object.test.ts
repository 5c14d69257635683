/**
 * @module An open WAL object held for the release's next step (wal-writer.ts,
 * `#holdOpen`) is sent by that step however it runs: a slow landing starts a
 * release by groups on the release timer, a fast landing meanwhile turns the
 * next step into the fast one (every commit at once), and that step, run
 * from the timer with no caller after it, must still send the held object.
 * The window is far longer than the test: only a send settles the held
 * commits, and one that never goes shows as commits unsettled after a
 * bounded number of event loop turns, not as a hang of the test.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Engine, MemoryStore, TaqubaError, WriteBatch } from "taquba";
import { RELEASE_GROUP, releaseTuning } from "../../runtime/engine/wal-writer.js";
import { GatedStore } from "../support/gated-store.js";
import { settlesWithinTurns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
/** Longer than any run of this test: the held object's window never ends on its own. */
const WINDOW_MS = 10 * 60_000;
/** Four release groups: after the first step three remain, enough to hold a one-group object open. */
const WAVE = 4 * RELEASE_GROUP;
/** Far more turns than a send and a release need over a memory store. */
const TURNS = 300;

/** A put's slowness is read from the threshold at its landing: 0 makes it slow, infinity fast. */
const slowPutMs = releaseTuning.slowPutMs;
const landsSlow = () => void (releaseTuning.slowPutMs = 0);
const landsFast = () => void (releaseTuning.slowPutMs = Number.POSITIVE_INFINITY);

describe("a WAL object held for the release's next step", () => {
  afterEach(() => {
    releaseTuning.slowPutMs = slowPutMs;
  });

  /**
   * Object A holds a wave of WAVE commits, object B one commit sent behind it; both puts are held. A lands
   * slow: the first group goes, and its continuations each commit again, gathering one group in the open
   * object, held while three groups wait to be released. From the last of them B is let go and lands fast,
   * so the next step, from the release timer, releases everything at once. `beforeB` runs once both puts
   * are held.
   */
  async function slowThenFastWhileHeld(engine: Engine, gated: GatedStore, beforeB: (key: string) => Promise<unknown> = async () => {}) {
    const followUps: Promise<void>[] = [];
    let letB: () => void = () => {
      throw new Error("B's put was not held");
    };
    const wave = Array.from({ length: WAVE }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i)))).then(() => {
        if (i >= RELEASE_GROUP) return;
        followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc(String(i)))));
        if (i === RELEASE_GROUP - 1) letB();
      }),
    );
    await gated.waitHeld(1);
    const b = engine.commit(new WriteBatch().put("b", enc("b")));
    const flushB = engine.flush();
    await gated.waitHeld(2);
    const [kA, kB] = gated.held.map((h) => h.key);
    await beforeB(kB!);
    gated.hold = () => false;
    letB = () => {
      landsFast();
      gated.release(kB!);
    };
    landsSlow();
    gated.release(kA!);
    return { wave, b, flushB, followUps };
  }

  /** An engine over a memory store whose WAL puts are held, with a window longer than the test. */
  async function heldEngine(): Promise<{ gated: GatedStore; engine: Engine }> {
    const gated = new GatedStore(new MemoryStore());
    const engine = await Engine.open(gated, { flushIntervalMs: WINDOW_MS, walCohorts: 1 });
    gated.hold = (k) => k.startsWith("wal/");
    return { gated, engine };
  }

  it("is sent by a fast step run from the release timer, and every commit settles", async () => {
    const { gated, engine } = await heldEngine();
    const { wave, b, flushB, followUps } = await slowThenFastWhileHeld(engine, gated);
    const settled = Promise.all([...wave, b, flushB]).then(() => {
      expect(followUps).toHaveLength(RELEASE_GROUP);
      return Promise.all(followUps);
    });
    expect(await settlesWithinTurns(settled, TURNS)).toBe(true);
    await settled;
    // A, B and the follow-ups' object: the held object went as one.
    expect(engine.stats.walPuts).toBe(3);
    await engine.close();
    const reopened = await Engine.open(gated.inner);
    expect([...reopened.scan({ prefix: "k/" })]).toHaveLength(WAVE);
    expect([...reopened.scan({ prefix: "next/" })]).toHaveLength(RELEASE_GROUP);
    expect(reopened.get("b")).toEqual(enc("b"));
    await reopened.close();
  });

  it("settles every commit when the put that would have landed fast fails instead: the stored wave resolves, the rest reject", async () => {
    const { gated, engine } = await heldEngine();
    // Something else takes B's name: its put fails, and the engine stops while an object is held.
    const { wave, b, flushB, followUps } = await slowThenFastWhileHeld(engine, gated, (kB) => gated.inner.put(kB, enc("not a WAL object")));
    const outcomes = Promise.all(wave).then(() => Promise.allSettled([b, flushB, ...followUps]));
    expect(await settlesWithinTurns(outcomes, TURNS)).toBe(true);
    const rest = await outcomes;
    expect(rest).toHaveLength(2 + RELEASE_GROUP);
    for (const o of rest) {
      expect(o.status).toBe("rejected");
      expect((o as PromiseRejectedResult).reason).toBeInstanceOf(TaqubaError);
    }
    expect(engine.closed).toBe(true);
    const reopened = await Engine.open(gated.inner).catch((e: unknown) => e);
    // B's name holds no WAL object: the reopen refuses the store rather than skip it.
    expect(reopened).toBeInstanceOf(TaqubaError);
  });
});
