/**
 * @module Attacks on the bounded `Engine.checkpoint()`: explicit calls made
 * at seeded moments among commits, beside automatic checkpoints, over a
 * LocalStore whose calls fail at random, while the engine closes and while
 * a second writer opens the same directory and fences the first. Every call
 * must settle (none hangs), reject only with a typed error, and when it
 * resolves a manifest covering every WAL object landed before the call must
 * be in the directory; a reopen afterwards holds every acknowledged commit.
 */
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, TaqubaError, WriteBatch, withFaults, type ObjectStore } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { keysUnder } from "../support/store-keys.js";

const tempDir = useTempDirs("taquba-checkpoint-call-");

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
 * One seeded round over `dir`: commits and explicit checkpoints interleaved
 * on engine `a` (faults switched on after open), with a close of `a` or a
 * second writer's open at a seeded step, or neither.
 */
async function round(r: TestRandom, dir: string): Promise<Round> {
  const raw = new LocalStore(dir);
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

describe("Engine.checkpoint() called among commits, faults, a close and a fencing writer (LocalStore)", () => {
  it("every call settles, rejects only with a typed error, is covered when it resolves, and a reopen holds every acknowledged commit", async () => {
    const r = testRandom("checkpoint-call-attack");
    for (let i = 0; i < 8; i++) {
      const dir = await tempDir();
      const got = await round(r, dir);
      const outcomes = await Promise.all(got.calls);
      for (const o of outcomes) {
        if (o !== "resolved") expect(o, `round ${i}: a call rejected with ${String(o)}`).toBeInstanceOf(TaqubaError);
      }
      expect(got.uncovered, `round ${i}`).toEqual([]);
      const reopened = await Engine.open(new LocalStore(dir));
      for (const [key, value] of got.acked) expect(dec(reopened.get(key)), `round ${i}: ${key}`).toBe(value);
      await reopened.close();
    }
  }, 30_000);
});
