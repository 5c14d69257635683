import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { filesNeedingOwnProcess, filesUnder, processStateNames } from "./test/support/isolated-files.js";

const root = fileURLToPath(new URL(".", import.meta.url));
const testDirs = ["test", "runtime", "codegen"];
const include = testDirs.map((d) => `${d}/**/*.test.ts`);
// Files that would see what an earlier file left in the process (test/support/isolated-files.ts).
const sources = ["runtime", "codegen"].flatMap((d) => filesUnder(root, d, ".ts")).filter((f) => !f.endsWith(".test.ts"));
const ownProcess = filesNeedingOwnProcess(
  testDirs.flatMap((d) => filesUnder(root, d, ".test.ts")),
  processStateNames(sources),
).map((f) => relative(root, f));

export default defineConfig({
  resolve: {
    // The package's entries, resolved to their sources (as tsconfig's paths do for the type checker).
    alias: [
      { find: /^taquba$/, replacement: fileURLToPath(new URL("./runtime/index.ts", import.meta.url)) },
      { find: /^taquba\/testing$/, replacement: fileURLToPath(new URL("./runtime/testing.ts", import.meta.url)) },
      { find: /^taquba\/generated$/, replacement: fileURLToPath(new URL("./runtime/generated.ts", import.meta.url)) },
      { find: /^taquba\/codegen$/, replacement: fileURLToPath(new URL("./codegen/index.ts", import.meta.url)) },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Every child process a test starts ends with that test (test/support/tied-children.ts); a file that leaves a
    // built-in prototype changed fails and the prototype is put back (test/support/built-ins-unchanged.setup.ts).
    setupFiles: [
      "test/support/tied-children.setup.ts",
      "test/support/built-ins-unchanged.setup.ts",
      "test/support/typed-array-equality.setup.ts",
      // TAQUBA_TEST_SEEDS=1-40 repeats each test once per seed (test/support/seed-sweep.setup.ts).
      "test/support/seed-sweep.setup.ts",
    ],
    // Two cores: more workers only add contention to the crash tests.
    maxWorkers: 2,
    projects: [
      // A fresh process per file, as for every file before: the files that read or set what the process holds.
      { extends: true, test: { name: "own-process", include: ownProcess, isolate: true } },
      // The rest may share each worker's loaded modules (loading the runtime again for each file was half the suite's
      // time): with TAQUBA_TEST_SHARED_MODULES=1, until a whole run of the suite that way has passed twice.
      { extends: true, test: { name: "shared", include, exclude: ownProcess, isolate: process.env.TAQUBA_TEST_SHARED_MODULES !== "1" } },
    ],
  },
});
