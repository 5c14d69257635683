/**
 * Vitest configuration for mutation testing (scripts/mutation.sh): the
 * main configuration, narrowed to the test files named in MUTATION_TESTS
 * (space-separated globs), one worker, so a run stays small on a shared machine.
 */
import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

const tests = (process.env.MUTATION_TESTS ?? "test/engine/**/*.test.ts test/queue/**/*.test.ts").split(/\s+/).filter(Boolean);

// Replaced, not merged: mergeConfig would append to the main include list.
export default defineConfig({ ...base, test: { ...base.test, include: tests, maxWorkers: 1 } });
