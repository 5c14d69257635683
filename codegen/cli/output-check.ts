/**
 * @module Compares freshly generated files with what is on disk (pure).
 *
 * `--check` uses it to report every missing, changed and stale file with a
 * unified diff, and the writer uses it to touch only files whose bytes
 * changed.
 */

import { createTwoFilesPatch } from "diff";
import type { GeneratedFile } from "../generate.js";
import { compareCodeUnits } from "../emit/names.js";

/** What differs between the expected files and those on disk. */
export interface OutputDrift {
  /** Generated now, absent on disk. */
  readonly missing: readonly string[];
  /** Present on both sides with different bytes. */
  readonly changed: readonly string[];
  /** Generated files on disk that no spec produces any more. */
  readonly stale: readonly string[];
  /** A unified diff of every difference, from disk to expected. */
  readonly diff: string;
}

/**
 * Compares `expected` with `onDisk`, which maps every generated file found
 * under the output folder (by relative path) to its content.
 */
export function compareOutput(expected: readonly GeneratedFile[], onDisk: ReadonlyMap<string, string>): OutputDrift {
  const missing: string[] = [];
  const changed: string[] = [];
  const patches: string[] = [];
  const produced = new Set<string>();
  for (const f of expected) {
    produced.add(f.path);
    const current = onDisk.get(f.path);
    if (current === undefined) {
      missing.push(f.path);
      patches.push(createTwoFilesPatch("/dev/null", `b/${f.path}`, "", f.content));
    } else if (current !== f.content) {
      changed.push(f.path);
      patches.push(createTwoFilesPatch(`a/${f.path}`, `b/${f.path}`, current, f.content));
    }
  }
  const stale = [...onDisk.keys()].filter((p) => !produced.has(p)).sort(compareCodeUnits);
  for (const p of stale) patches.push(createTwoFilesPatch(`a/${p}`, "/dev/null", onDisk.get(p) ?? "", ""));
  return { missing: missing.sort(compareCodeUnits), changed: changed.sort(compareCodeUnits), stale, diff: patches.join("") };
}

/** Whether anything differs. */
export function hasDrift(drift: OutputDrift): boolean {
  return drift.missing.length + drift.changed.length + drift.stale.length > 0;
}
