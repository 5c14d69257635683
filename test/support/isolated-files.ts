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

/** Whether the test file `text` needs a process of its own (see the module comment). */
export function needsOwnProcess(text: string): boolean {
  return ISOLATING_MARKS.some(({ mark }) => mark.test(text));
}

/** Of `files`, those that need a process of their own. */
export function filesNeedingOwnProcess(files: readonly string[]): string[] {
  return files.filter((f) => needsOwnProcess(readFileSync(f, "utf8")));
}

/** The files under `dir` (relative to `root`) whose names end in `.test.ts`. */
export function testFilesUnder(root: string, dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".test.ts")) found.push(join(entry.parentPath, entry.name));
  }
  return found;
}
