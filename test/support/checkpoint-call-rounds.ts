/**
 * @module The seeded rounds of the `Engine.checkpoint()` attack, over any
 * store: explicit calls made at seeded moments among commits, beside
 * automatic checkpoints, over a store whose calls fail at random, while the
 * engine closes and while a second writer opens the same store and fences
 * the first. The LocalStore and the s3rver attacks run the same rounds.
 */
import { expect } from "vitest";
import { Engine, TaqubaError, WriteBatch, withFaults, type ObjectStore } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { testRandom, type TestRandom } from "./seed.js";
import { keysUnder } from "./store-keys.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

/** The highest WAL sequence number in `store` (0 when none). */
async function newestWal(store: ObjectStore): Promise<number> {
  let seq = 0;
  for (const key of await keysUnder(store, "wal/")) seq = Math.max(seq, parseNumberedKey("", "wal", key) ?? 0);
  return seq;
}

/** The highest `walNext` among the manifests in `store`. */
async function coveredThrough(store: ObjectStore): Promise<number> {
  let walNext = 0;
  for (const key of await keysUnder(store, "manifest/")) {
    const id = parseNumberedKey("", "manifest", key);
    const got = id === undefined ? null : await store.get(key);
    // Deleted since the listing by a later checkpoint's garbage collection, which keeps newer ones.
    if (id === undefined || got === null) continue;
    walNext = Math.max(walNext, decodeManifest(key, got.body, id).walNext);
  }
  return walNext;
}

interface Round {
  /** Keys whose commit was acknowledged, with their value. */
  acked: Map<string, string>;
  /** Every explicit checkpoint call's outcome: "resolved" or the rejection. */
  calls: Promise<unknown>[];
  /** Resolved calls whose covering manifest was not found at their return. */
  uncovered: string[];
}

/**
 * One seeded round over `raw`: commits and explicit checkpoints interleaved
 * on engine `a` (faults switched on after open), with a close of `a` or a
 * second writer's open at a seeded step, or neither.
 */
async function round(r: TestRandom, raw: ObjectStore): Promise<Round> {
  const faulty = withFaults(raw, { failureRate: 0, seed: r.int(2 ** 31) + 1 });
  const a = await Engine.open(faulty, {
    checkpointWalObjects: r.int(3),
    checkpointWalBytes: 0,
    checkpointBacklog: 0,
    flushIntervalMs: r.int(2),
    retry: { attempts: 1 + r.int(3), baseDelayMs: 0, maxDelayMs: 1 },
    onBackgroundError: () => {},
  });
  faulty.failureRate = [0, 0.02, 0.08][r.int(3)]!;
  const out: Round = { acked: new Map(), calls: [], uncovered: [] };
  const steps = 40;
  const closeAt = r.int(3) === 0 ? r.int(steps) : -1;
  const fenceAt = closeAt < 0 && r.int(2) === 0 ? r.int(steps) : -1;
  let b: Engine | undefined;
  const commits: Promise<unknown>[] = [];
  for (let step = 0; step < steps; step++) {
    if (step === closeAt) void a.close();
    if (step === fenceAt) b = await Engine.open(raw, { onBackgroundError: () => {} });
    const writer = b ?? a;
    const key = `k/${String(step).padStart(3, "0")}`;
    const value = `${step}:${b === undefined ? "a" : "b"}`;
    commits.push(
      writer.commit(new WriteBatch().put(key, enc(value))).then(
        () => out.acked.set(key, value),
        () => {},
      ),
    );
    if (r.int(2) === 0) await commits.at(-1);
    if (r.int(3) !== 0) continue;
    // What landed before the call is sealed before it: a manifest the call returns after must pass it.
    const fenced = b !== undefined;
    const landed = fenced ? 0 : await newestWal(raw);
    const label = `checkpoint at step ${step}, WAL through ${landed}`;
    const call = a.checkpoint().then(async () => {
      if (!fenced && b === undefined && (await coveredThrough(raw)) <= landed) out.uncovered.push(label);
      return "resolved";
    });
    out.calls.push(call.catch((err: unknown) => err));
    if (r.int(2) === 0) await out.calls.at(-1);
  }
  await Promise.allSettled(commits);
  faulty.failureRate = 0;
  await a.close();
  await b?.close();
  return out;
}

/**
 * Runs `rounds` seeded rounds, each over a fresh empty store `freshStore`
 * gives (with `reopen`, a new view of the same place), and checks each:
 * every call settled, rejected only with a typed error and was covered
 * when it resolved, and a reopen holds every acknowledged commit.
 */
export async function checkpointCallRounds(
  name: string,
  rounds: number,
  freshStore: (round: number) => Promise<{ store: ObjectStore; reopen: () => ObjectStore }>,
): Promise<void> {
  const r = testRandom(name);
  for (let i = 0; i < rounds; i++) {
    const { store, reopen } = await freshStore(i);
    const got = await round(r, store);
    const outcomes = await Promise.all(got.calls);
    for (const o of outcomes) {
      if (o !== "resolved") expect(o, `round ${i}: a call rejected with ${String(o)}`).toBeInstanceOf(TaqubaError);
    }
    expect(got.uncovered, `round ${i}`).toEqual([]);
    const reopened = await Engine.open(reopen());
    for (const [key, value] of got.acked) expect(dec(reopened.get(key)), `round ${i}: ${key}`).toBe(value);
    await reopened.close();
  }
}
