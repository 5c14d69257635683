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
 */

/** Fewest commits a cohort is split off with: under about a put's worth of CPU, two puts cost more than the overlap gains. */
export const MIN_COHORT_COMMITS = 16;

/** Most cohorts `walCohorts` may ask for: each needs an object on its way to the store, and past a few they fall under `MIN_COHORT_COMMITS`. */
export const MAX_WAL_COHORTS = 16;

/** The early-seal rule of one WAL writer; `cohorts` 1 never seals early (the open object goes at the end of the turn). */
export class CohortSeal {
  readonly #cohorts: number;
  readonly #putsContend: boolean;
  /** The commits of the last wave: those a landing made durable, plus those gathered or on their way meanwhile. */
  #wave = 0;

  constructor(cohorts: number, putsContend: boolean) {
    this.#cohorts = cohorts;
    this.#putsContend = putsContend;
  }

  /** The cohorts in force (what a bench of the split reports beside its counts). */
  get cohorts(): number {
    return this.#cohorts;
  }

  /** At a landing that made `durable` commits durable, with `gathered` in the open object and `ahead` in objects not yet stored. */
  noteLanding(durable: number, gathered: number, ahead: number): void {
    this.#wave = durable + gathered + ahead;
  }

  /** Whether an open object holding `gathered` commits goes now, with `objectsAhead` sealed objects not yet stored. */
  sealsEarly(gathered: number, objectsAhead: number): boolean {
    if (objectsAhead >= this.#cohorts - 1) return false;
    const share = Math.ceil(this.#wave / this.#cohorts);
    return share >= MIN_COHORT_COMMITS && gathered >= share;
  }

  /** Whether an open object whose window ended waits for a landing instead, with `objectsAhead` sealed objects not yet stored. */
  waitsForLanding(objectsAhead: number): boolean {
    return this.#putsContend && this.#cohorts > 1 && objectsAhead >= this.#cohorts - 1;
  }
}
