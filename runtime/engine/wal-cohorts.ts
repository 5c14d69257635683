/**
 * @module When the group commit seals an object early to split a wave of
 * commits into cohorts (`EngineOptions.walCohorts`).
 *
 * Writers released together by one stored object (a wave) run their
 * continuations in one turn and commit again at its end. Sealed only at the
 * end of that turn, the whole wave's next commits leave in one object, and
 * the main thread then waits for that put with nothing to do: a cycle costs
 * the wave's CPU plus a put, never overlapped, though the put runs elsewhere
 * (LocalStore's put thread, a remote store). With `k` cohorts the open object
 * is sealed as soon as it holds a `k`-th of the wave, while fewer than
 * `k - 1` objects are on their way to the store: the put starts while the
 * rest of the wave still runs. The split keeps itself after that: each
 * landing seals what gathered meanwhile and releases one cohort, whose CPU
 * then overlaps the next cohort's put. Over a store whose puts contend (a
 * local disk) the window's end sends nothing beside the cohorts' puts: a
 * put beside another only shares the disk, and LocalStore makes it through
 * the thread pool with its file calls on the main thread; what gathered
 * goes at the next landing.
 *
 * With CPU `c` per commit, a put's wall time `p` and `n` writers, lock step
 * (`k = 1`) makes a cycle of `n·c + p` for `n` commits and one put; two
 * cohorts make it `max(n·c, 2·p, n·c/2 + p)` for two puts. The second wins
 * while `n·c > p` and a spare core runs the put; when the CPU is the limit
 * (a busy machine) each extra put is only extra work (bench/RESULTS.md,
 * "Cohorts at 50 in flight").
 *
 * Chosen by the engine (`walCohorts` not given) over a store whose puts
 * contend: the writer measures both sides of that comparison as it runs
 * and picks 2 cohorts at a landing while a put's wall time `p` is under
 * the wave's `n·c`, else 1. `c` is read off the objects themselves: the
 * time from an object's first commit to its last over the commits between
 * (the wave's continuations running one after another), so an idle gap
 * before a burst does not count; `p` is from a put's start to its landing.
 * Both are wall time, so a busy machine (the main thread waiting for a
 * core, a disk shared with other writers) is in them: where the disk is
 * slow, `p` grows past the wave's CPU and the writer stays in lock step;
 * where the put is short beside the wave's CPU (a quiet machine, the put
 * thread on the spare core), the wave is split (bench/RESULTS.md, "Two WAL
 * cohorts over LocalStore while a put is shorter than the wave").
 * Over a store whose puts do not contend the default stays 1: a slow
 * store's release by groups already overlaps its puts (wal-writer.ts).
 */

/** Fewest commits a cohort is split off with: under about a put's worth of CPU, two puts cost more than the overlap gains. */
export const MIN_COHORT_COMMITS = 16;

/** Most cohorts `walCohorts` may ask for: each needs an object on its way to the store, and past a few they fall under `MIN_COHORT_COMMITS`. */
export const MAX_WAL_COHORTS = 16;

/** Cohorts the chosen split uses: the model's gain is at two (one cohort's CPU beside the other's put); more only add puts. */
export const CHOSEN_COHORTS = 2;

/** Landings in lock step after which the chosen split tries two cohorts again, to measure their puts anew. */
export const PROBE_EVERY_LANDINGS = 32;

/** Puts measured after a switch to two cohorts before their average may send the writer back to lock step. */
const PUTS_BEFORE_VERDICT = 2;

/** Measurements each side of the comparison keeps: the median of the last few, so that one put the system held up, or a burst after an idle gap, does not decide. */
const SAMPLES = 5;

/**
 * The clock the chosen split measures with (ms, sub-millisecond): a mutable
 * object, internal to the engine, so tests can make puts and commits take
 * the time they need.
 */
export const cohortTiming = { now: (): number => performance.now() };

/**
 * Whether a wave of `wave` commits, each taking `commitMs` of the main
 * thread's wall time, is worth splitting in two over puts taking `putMs`:
 * lock step's cycle is `n·c + p`, two cohorts' `max(n·c, 2·p)`, shorter
 * exactly while `p < n·c`. Unmeasured (NaN) is never worth it.
 */
export function splitPays(putMs: number, commitMs: number, wave: number): boolean {
  return putMs < commitMs * wave;
}

/** The last `SAMPLES` measurements; their median is NaN until there is one. */
class Recent {
  #values: number[] = [];

  add(v: number): void {
    if (this.#values.push(v) > SAMPLES) this.#values.shift();
  }

  clear(): void {
    this.#values = [];
  }

  median(): number {
    const n = this.#values.length;
    if (n === 0) return Number.NaN;
    const s = [...this.#values].sort((a, b) => a - b);
    return n % 2 === 1 ? s[n >> 1]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
  }
}

/**
 * The early-seal rule of one WAL writer; `cohorts` 1 never seals early (the
 * open object goes at the end of the turn); undefined: chosen at each
 * landing from what it measures (the module documentation), over a store
 * whose puts contend, else 1.
 */
export class CohortSeal {
  readonly #chosen: boolean;
  #cohorts: number;
  readonly #putsContend: boolean;
  /** The commits of the last wave: those a landing made durable, plus those gathered or on their way meanwhile. */
  #wave = 0;
  /** A put's wall time (ms) since the last switch. */
  readonly #putMs = new Recent();
  /** Puts that landed since the last switch (the first was sealed before it and is not measured). */
  #putsSinceSwitch = 0;
  /** The main thread's time (ms) per commit of a wave: from the landing that released it to an object's last commit, over the object's commits. */
  readonly #commitMs = new Recent();
  /** Landings since the chosen split went to lock step. */
  #lockLandings = 0;

  constructor(cohorts: number | undefined, putsContend: boolean) {
    this.#chosen = cohorts === undefined && putsContend;
    this.#cohorts = cohorts ?? (this.#chosen ? CHOSEN_COHORTS : 1);
    this.#putsContend = putsContend;
  }

  /** The cohorts in force now (changes at landings when chosen). */
  get cohorts(): number {
    return this.#cohorts;
  }

  /** Whether the split is chosen at each landing rather than fixed. */
  get chosen(): boolean {
    return this.#chosen;
  }

  /** A put took `ms` from its start to its landing. */
  notePut(ms: number): void {
    if (!this.#chosen || this.#putsSinceSwitch++ === 0) return;
    this.#putMs.add(ms);
  }

  /**
   * An object sealed with `commits` commits, the last `workMs` after the
   * landing before its first: the released writers' work, which runs their
   * continuations breadth-first and commits at the end of it.
   */
  noteObject(commits: number, workMs: number): void {
    // A small object's commits came from a trickle, not a wave running: their time says nothing of a step's CPU.
    if (!this.#chosen || commits < MIN_COHORT_COMMITS || !(workMs >= 0)) return;
    this.#commitMs.add(workMs / commits);
  }

  /** At a landing that made `durable` commits durable, with `gathered` in the open object and `ahead` in objects not yet stored. */
  noteLanding(durable: number, gathered: number, ahead: number): void {
    this.#wave = durable + gathered + ahead;
    if (!this.#chosen || this.#wave < CHOSEN_COHORTS * MIN_COHORT_COMMITS) return;
    const pays = splitPays(this.#putMs.median(), this.#commitMs.median(), this.#wave);
    if (this.#cohorts > 1) {
      // Overlapped, the puts still take longer than the wave's work: the disk is the limit, and halves only add puts.
      if (this.#putsSinceSwitch > PUTS_BEFORE_VERDICT && !pays) this.#switchTo(1);
    } else if (pays || ++this.#lockLandings >= PROBE_EVERY_LANDINGS) {
      // A put in lock step is also the main thread's sleep and wake-up, which two cohorts do not pay: try them again now and then.
      this.#switchTo(CHOSEN_COHORTS);
    }
  }

  #switchTo(cohorts: number): void {
    this.#cohorts = cohorts;
    this.#putMs.clear();
    this.#putsSinceSwitch = 0;
    this.#lockLandings = 0;
  }

  /** Whether an open object holding `gathered` commits goes now, with `objectsAhead` sealed objects not yet stored. */
  sealsEarly(gathered: number, objectsAhead: number): boolean {
    if (objectsAhead >= this.#cohorts - 1) return false;
    const share = Math.ceil(this.#wave / this.#cohorts);
    return share >= MIN_COHORT_COMMITS && gathered >= share;
  }

  /**
   * Whether an open object whose window ended waits for a landing instead,
   * with `objectsAhead` sealed objects not yet stored: beside the cohorts'
   * puts, and in the chosen lock step beside any (`mergesAtLanding`).
   */
  waitsForLanding(objectsAhead: number): boolean {
    if (!this.#putsContend || objectsAhead === 0) return false;
    return this.#cohorts > 1 ? objectsAhead >= this.#cohorts - 1 : this.#chosen;
  }

  /**
   * Whether commits gathered while a put was in flight wait at its landing
   * for the commits it releases, and go with them at the end of the turn:
   * in the chosen lock step, so that a wave left in two halves by two
   * cohorts becomes one again (sent at the landing, the gathered half would
   * keep its own put, and the halves would alternate for good).
   */
  mergesAtLanding(): boolean {
    return this.#chosen && this.#cohorts === 1;
  }
}
