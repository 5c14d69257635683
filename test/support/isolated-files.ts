/**
 * @module Which test files run in a fresh process of their own (see
 * vitest.config.ts). Most files share their worker's loaded modules: a
 * file then costs its own tests, not another load of the whole runtime.
 * A file that replaces modules, or reads or sets state the process holds
 * beside the test (its open files and timers, its memory, a module's
 * counters, a global provider, the put threads every LocalStore shares),
 * would see what an earlier file left there, or leave its own: such a
 * file runs alone in a fresh process, as every file did before.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** What in a test file's text marks it for a process of its own, and why. */
export const ISOLATING_MARKS: readonly { readonly mark: RegExp; readonly why: string }[] = [
  { mark: /\bvi\.(mock|doMock|unmock|doUnmock|stubGlobal|stubEnv|resetModules)\(/, why: "replaces modules or globals for its own imports" },
  { mark: /\/proc\/self\/|getActiveResourcesInfo|_getActiveHandles|memoryUsage\(|getHeapStatistics/, why: "counts the process's files, timers or memory" },
  { mark: /cpuUsage\(|cpuTimed|resourceUsage\(|eventLoopUtilization/, why: "measures the CPU its process spends" },
  { mark: /@opentelemetry\//, why: "registers a global telemetry provider" },
  { mark: /gaugeSourceCount|key-run-tally|local-put-thread/, why: "reads or sets a module's process-wide state" },
  { mark: /\/\/ test: own process\b/, why: "asks for it by name" },
];

/** A module-level object or binding a source exports for tests to tune or count through (`stateTuning`, `cursorStats`). */
const MUTABLE_EXPORT = /^export (?:let|const) ([a-z]\w*)(?::[^=\n]+)? = (?:\{|new (?:Map|Set)\b|\[)|^export let ([a-z]\w*)/gm;

/**
 * The names of the module-level state the sources in `files` export for
 * tests (tunings, counters, switches) and the functions that switch such
 * state on: a file that names one sets or reads state that outlives it.
 */
export function processStateNames(files: readonly string[]): string[] {
  const names = new Set(["countFilterProbes", "trackKeyRuns", "setTelemetrySwitchedOff"]);
  for (const f of files) {
    for (const m of readFileSync(f, "utf8").matchAll(MUTABLE_EXPORT)) names.add((m[1] ?? m[2])!);
  }
  return [...names].sort();
}

/** Whether the test file `text` needs a process of its own (see the module comment), given the sources' `stateNames`. */
export function needsOwnProcess(text: string, stateNames: readonly string[] = []): boolean {
  return ISOLATING_MARKS.some(({ mark }) => mark.test(text)) || stateNames.some((n) => new RegExp(`\\b${n}\\b`).test(text));
}

/** Of `files`, those that need a process of their own, given the sources' `stateNames`. */
export function filesNeedingOwnProcess(files: readonly string[], stateNames: readonly string[] = []): string[] {
  return files.filter((f) => needsOwnProcess(readFileSync(f, "utf8"), stateNames));
}

/** The files under `dir` (relative to `root`) whose names end in `suffix`. */
export function filesUnder(root: string, dir: string, suffix: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(suffix)) found.push(join(entry.parentPath, entry.name));
  }
  return found;
}
