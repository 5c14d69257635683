import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

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
    include: ["test/**/*.test.ts", "runtime/**/*.test.ts", "codegen/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Every child process a test starts ends with that test (test/support/tied-children.ts).
    setupFiles: ["test/support/tied-children.setup.ts"],
    // Two cores: more workers only add contention to the crash tests.
    maxWorkers: 2,
  },
});
