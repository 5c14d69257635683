/**
 * @module Vitest setup file: a test file that leaves a built-in prototype or
 * namespace changed (a field added, removed or redefined on
 * `Object.prototype`, `Array.prototype`, `Uint8Array.prototype`, ...) fails
 * after its tests, naming what it left, and the built-in is put back as it
 * was. Files that share their worker's process (vitest.config.ts) would
 * otherwise run on what an earlier file left: a job record decoded over a
 * polluted prototype takes another path, and fails far from the file at
 * fault.
 */
import { afterAll } from "vitest";
import { builtInsChanged, builtInsState, restoreBuiltIns } from "./built-ins.js";

const before = builtInsState();

afterAll(() => {
  const changed = builtInsChanged(before);
  if (changed.length === 0) return;
  restoreBuiltIns(before);
  throw new Error(`this file left built-ins changed (put back now): ${changed.join("; ")}; restore what a test changes in a finally block`);
});
