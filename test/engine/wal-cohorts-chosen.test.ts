/**
 * @module The cohort split the engine chooses when `walCohorts` is not
 * given (wal-cohorts.ts): over a store whose puts contend it starts split
 * in two, goes to lock step once the puts, overlapped, still take longer
 * than the wave's work, tries two cohorts again after a while or as soon
 * as a put in lock step is shorter than the wave's work, and decides on
 * the median of the last measurements, not one outlier. A fixed setting
 * and a store whose puts do not contend never move.
 */
import { describe, expect, it } from "vitest";
import { CHOSEN_COHORTS, CohortSeal, MIN_COHORT_COMMITS, PROBE_EVERY_LANDINGS, splitPays } from "../../runtime/engine/wal-cohorts.js";

const WAVE = 50;

/**
 * One cycle as the writer reports it: an object of `WAVE / cohorts` commits whose work (from the landing before it
 * to its last commit) took `commitMs` per commit, its put `putMs`, then its landing with the rest of the wave
 * gathered or on its way.
 */
function cycle(seal: CohortSeal, putMs: number, commitMs: number): void {
  const share = Math.ceil(WAVE / seal.cohorts);
  seal.noteObject(share, commitMs * share);
  seal.notePut(putMs);
  seal.noteLanding(share, WAVE - share, 0);
}

describe("the chosen WAL cohort split", () => {
  it("pays exactly while a put is shorter than the wave's work, and never unmeasured", () => {
    expect(splitPays(0.9, 0.04, 50)).toBe(true); // 0.9 ms against 2 ms
    expect(splitPays(2.1, 0.04, 50)).toBe(false);
    expect(splitPays(Number.NaN, 0.04, 50)).toBe(false);
    expect(splitPays(0.9, Number.NaN, 50)).toBe(false);
  });

  it("starts in two cohorts over a store whose puts contend, in one over any other", () => {
    expect(new CohortSeal(undefined, true).cohorts).toBe(CHOSEN_COHORTS);
    expect(new CohortSeal(undefined, true).chosen).toBe(true);
    const other = new CohortSeal(undefined, false);
    expect(other.cohorts).toBe(1);
    expect(other.chosen).toBe(false);
    for (let i = 0; i < 3 * PROBE_EVERY_LANDINGS; i++) cycle(other, 0.1, 1);
    expect(other.cohorts).toBe(1);
  });

  it("stays split while the puts are shorter than the wave's work", () => {
    const seal = new CohortSeal(undefined, true);
    for (let i = 0; i < 100; i++) {
      cycle(seal, 0.9, 0.04);
      expect(seal.cohorts).toBe(2);
    }
    expect(seal.mergesAtLanding()).toBe(false);
  });

  it("goes to lock step once three puts in two cohorts were longer than the wave's work, not before", () => {
    const seal = new CohortSeal(undefined, true);
    // The first put after the switch was sealed before it and is not measured; the next two decide.
    cycle(seal, 20, 0.1);
    cycle(seal, 20, 0.1);
    expect(seal.cohorts).toBe(2);
    cycle(seal, 20, 0.1);
    expect(seal.cohorts).toBe(1);
    // In lock step it does not seal early; what gathers beside a put waits for its landing and goes with the wave it releases.
    expect(seal.sealsEarly(WAVE, 0)).toBe(false);
    expect(seal.waitsForLanding(1)).toBe(true);
    expect(seal.waitsForLanding(0)).toBe(false);
    expect(seal.mergesAtLanding()).toBe(true);
  });

  it("tries two cohorts again after PROBE_EVERY_LANDINGS landings in lock step, and goes back if the disk is still slow", () => {
    const seal = new CohortSeal(undefined, true);
    for (let i = 0; i < 3; i++) cycle(seal, 20, 0.1);
    expect(seal.cohorts).toBe(1);
    for (let i = 1; i < PROBE_EVERY_LANDINGS; i++) {
      cycle(seal, 20, 0.1);
      expect(seal.cohorts).toBe(1);
    }
    cycle(seal, 20, 0.1);
    expect(seal.cohorts).toBe(2);
    expect(seal.sealsEarly(Math.ceil(WAVE / 2), 0)).toBe(true);
    for (let i = 0; i < 3; i++) cycle(seal, 20, 0.1);
    expect(seal.cohorts).toBe(1);
  });

  it("goes back to two cohorts at once when a put in lock step is shorter than the wave's work", () => {
    const seal = new CohortSeal(undefined, true);
    for (let i = 0; i < 3; i++) cycle(seal, 20, 0.1);
    expect(seal.cohorts).toBe(1);
    // The first put after the switch is not measured: the next one is.
    cycle(seal, 1, 0.1);
    expect(seal.cohorts).toBe(1);
    cycle(seal, 1, 0.1);
    expect(seal.cohorts).toBe(2);
  });

  it("is not moved by one slow put among short ones, nor by one burst after an idle gap", () => {
    const seal = new CohortSeal(undefined, true);
    for (let i = 0; i < 6; i++) cycle(seal, 0.9, 0.04);
    cycle(seal, 50, 0.04);
    expect(seal.cohorts).toBe(2);
    const lock = new CohortSeal(undefined, true);
    for (let i = 0; i < 6; i++) cycle(lock, 20, 0.1);
    expect(lock.cohorts).toBe(1);
    // A burst after a second of nothing: its object's work counts from the last landing, a second back.
    lock.noteObject(WAVE, 1000);
    lock.notePut(20);
    lock.noteLanding(WAVE, 0, 0);
    expect(lock.cohorts).toBe(1);
  });

  it("does not measure small objects, nor decide at a wave too small to split", () => {
    const seal = new CohortSeal(undefined, true);
    for (let i = 0; i < 10; i++) {
      seal.noteObject(MIN_COHORT_COMMITS - 1, 1000);
      seal.notePut(20);
      seal.noteLanding(10, 0, 0);
    }
    expect(seal.cohorts).toBe(2);
    // No object measured: unmeasured never pays, so waves large enough go to lock step.
    seal.noteLanding(WAVE, 0, 0);
    expect(seal.cohorts).toBe(1);
  });

  it("never moves a fixed setting", () => {
    for (const fixed of [1, 2, 3]) {
      const seal = new CohortSeal(fixed, true);
      for (let i = 0; i < 2 * PROBE_EVERY_LANDINGS; i++) cycle(seal, i % 2 === 0 ? 20 : 0.1, 0.04);
      expect(seal.cohorts).toBe(fixed);
      expect(seal.chosen).toBe(false);
      expect(seal.mergesAtLanding()).toBe(false);
    }
  });
});
