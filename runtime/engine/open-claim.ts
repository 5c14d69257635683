/**
 * @module An open's claim of the next manifest number, against a live writer
 * whose checkpoints may take that number first.
 *
 * A claim copies the manifest just before its number with the epoch bumped:
 * the old writer's garbage collection keeps only what its newest manifest
 * needs, so a claim that copied an older one could name deleted objects.
 * After a lost claim the open therefore rebases on the very manifest that
 * took the number, read by its number, and finds anything newer by reading
 * the numbers after it one by one until one is absent: no listing between a
 * loss and the next claim, so the window the live writer has to win in is
 * one read long. The open gives up only after both `MIN_LOST_CLAIMS` losses
 * and `CLAIM_PATIENCE_MS` of the engine's clock, so a slow machine, whose
 * every step takes longer, gets as many tries as it needs. Only the clock's
 * forward steps count: set back an hour, it would otherwise keep the open
 * claiming for that hour. A clock that never moves forward (a mock clock
 * nobody advances) would then keep it claiming forever, and a walk that
 * always finds a newer manifest would never reach a claim, so the open
 * also gives up once the live writer published `MAX_MANIFESTS_PASSED`
 * manifests it had to get past (each lost claim's winner and each newer
 * one it read), however the clock moves. That count grows with how often
 * the writer checkpoints, not with how slow the open is, so the cap cuts
 * the patience short only against a writer checkpointing many times a
 * second.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as pause } from "node:timers/promises";
import { FencedError, StoreUnavailableError } from "../errors.js";
import { manifestKey } from "./layout.js";
import { decodeManifest, type Manifest } from "./manifest.js";
import { confirmManifest, putManifest } from "./checkpoint.js";
import { readNewestManifest, type StoreContext } from "./recovery.js";
import { getWithRetries } from "./store-ops.js";
import { openWrite } from "./store-refusal.js";

/** How long (by the engine's clock) an open keeps claiming while a live writer's checkpoints take every number. */
export const CLAIM_PATIENCE_MS = 30_000;
/** The fewest claims an open loses before it gives up, however the clock moves (a clock set forward must not end it at once). */
export const MIN_LOST_CLAIMS = 8;
/**
 * The most manifests of a live writer an open gets past (the winners of its
 * lost claims, and the newer ones it reads before the next claim) before it
 * gives up, however the clock moves: one that stands still must not keep it
 * claiming forever. Meeting this many within the patience takes a writer
 * checkpointing over 30 times a second.
 */
export const MAX_MANIFESTS_PASSED = 1_000;
/**
 * Longest pause before a claim after two losses in a row. The pause is
 * random, up to the last attempt's length: an open whose read-and-claim
 * takes as long as the old writer's checkpoint would otherwise meet that
 * checkpoint at the same point of its round every time.
 */
const MAX_PAUSE_MS = 50;

/** A claim that landed, or the manifest that took its number first (the base of the next claim). */
export type ClaimOutcome = { claim: Manifest } | { lostTo: Manifest };

/**
 * Publishes the manifest after `base` with a bumped epoch, dated by `now`.
 * The claim carries an id of its own (`Manifest.opener`): create-if-absent
 * takes its own bytes found in place for a retried put that landed, so two
 * opens racing from one base must never write the same bytes. A number
 * taken by a manifest of a newer epoch means another writer opened:
 * `FencedError`; so is a claim the store itself refuses (`FencedError` from
 * its put, as an owner's lease guard throws once its lease is gone), which
 * no retry could land.
 */
export async function claimAfter(ctx: StoreContext, base: Manifest, now: () => number): Promise<ClaimOutcome> {
  const opener = randomBytes(12).toString("base64url");
  const claim: Manifest = { ...base, id: base.id + 1, epoch: base.epoch + 1, createdAt: now(), lastSegment: 0, opener };
  // A FencedError of the put is no lost race (a taken number is an answer of the put, not an error): the store
  // itself refuses this process's writes, so no later claim can land either.
  const put = await openWrite(() => putManifest(ctx, claim));
  try {
    await confirmManifest(ctx, claim, put);
    return { claim };
  } catch (err) {
    if (!(err instanceof FencedError)) throw err;
  }
  // Usually a checkpoint of the current writer took the number: it is the next base.
  const taken = await readManifestAt(ctx, claim.id);
  if (taken !== undefined && taken.opener !== opener) {
    if (taken.epoch >= claim.epoch) throw anotherOpened(taken);
    return { lostTo: taken };
  }
  // This claim landed below a newer manifest (publishManifest refused it), or the one that took the number is
  // already collected: the live writer moved on by more than a read would catch up with, so list.
  const newest = (await readNewestManifest(ctx))!;
  // The claim lost to a manifest at its number or past it, so a listing that found none lost them to the live
  // writer's deletes (a listing is not a snapshot): the next claim walks on from this one's base instead of from
  // the empty store's manifest, whose claim every manifest of the live epoch would refuse as another writer's.
  if (newest.id < claim.id) return { lostTo: base };
  if (newest.epoch >= claim.epoch) throw anotherOpened(newest);
  return { lostTo: newest };
}

/**
 * The newest manifest from `known` on, read by number (one read per newer
 * manifest, and one that finds the next number free). A newer epoch among
 * them means another writer opened: `FencedError`. `race` ends a walk that
 * never reaches a free number.
 */
export async function newestFrom(ctx: StoreContext, known: Manifest, race: ClaimRace): Promise<Manifest> {
  let newest = known;
  for (;;) {
    const next = await readManifestAt(ctx, newest.id + 1);
    if (next === undefined) return newest;
    if (next.epoch > newest.epoch) throw anotherOpened(next);
    newest = next;
    race.passed();
  }
}

/** Manifest `id`, or undefined when it is absent. */
async function readManifestAt(ctx: StoreContext, id: number): Promise<Manifest | undefined> {
  const key = manifestKey(ctx.prefix, id);
  const bytes = await getWithRetries(ctx.store, key, ctx.retry);
  return bytes === null ? undefined : decodeManifest(key, bytes, id);
}

function anotherOpened(m: Manifest): FencedError {
  return new FencedError(`another writer opened the store at the same time (manifest ${m.id} has epoch ${m.epoch})`);
}

/** The claims an open lost, and when it gives up. */
export class ClaimRace {
  readonly #prefix: string;
  readonly #now: () => number;
  /** The clock's forward steps since the open started: a clock set back must not buy the open more claims. */
  #elapsed = 0;
  #seenAt: number;
  #lost = 0;
  /** Manifests of the live writer the open got past: lost claims' winners and newer ones walked to. */
  #passed = 0;
  #attemptStartedAt = performance.now();

  constructor(prefix: string, now: () => number) {
    this.#prefix = prefix;
    this.#now = now;
    this.#seenAt = now();
  }

  /** Adds the time the clock moved forward since it was last read; a step back only moves where the next step starts. */
  #tick(): number {
    const now = this.#now();
    if (now > this.#seenAt) this.#elapsed += now - this.#seenAt;
    this.#seenAt = now;
    return this.#elapsed;
  }

  /** Throws `StoreUnavailableError` once the open has lost enough claims for long enough, or the most it may lose. */
  check(): void {
    const elapsed = this.#tick();
    const capped = this.#passed >= MAX_MANIFESTS_PASSED;
    if (!capped && (this.#lost < MIN_LOST_CLAIMS || elapsed < CLAIM_PATIENCE_MS)) return;
    const seconds = Math.round(elapsed / 1000);
    const what = capped
      ? `${this.#passed} manifests while this open tried to claim the next number (the most an open gets past; it lost ${this.#lost} claims), in ${seconds} s by the engine's clock`
      : `a manifest before each of this open's ${this.#lost} claims, for ${seconds} s`;
    throw new StoreUnavailableError(
      "open",
      `${this.#prefix}manifest/`,
      new Error(`another writer published ${what}`),
      "another process keeps checkpointing this store: stop it, or open again",
    );
  }

  /** Counts a newer manifest read on the way to the next claim; throws once past the bound. */
  passed(): void {
    this.#passed++;
    this.check();
  }

  /** Counts a lost claim; throws once past the bound, and from the second loss in a row pauses a random while. */
  async lost(): Promise<void> {
    this.#lost++;
    this.#passed++;
    this.check();
    const attemptMs = performance.now() - this.#attemptStartedAt;
    // Real time, not the engine's clock: the pause is sized from the store's round trips, and a mock clock must not hold an open.
    if (this.#lost >= 2) await pause(Math.random() * Math.min(attemptMs, MAX_PAUSE_MS));
    this.#attemptStartedAt = performance.now();
  }
}
