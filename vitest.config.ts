import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: {
      taquba: fileURLToPath(new URL("./runtime/index.ts", import.meta.url)),
    },
  },
  test: {
    include: ["test/**/*.test.ts", "runtime/**/*.test.ts", "codegen/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: more workers only add contention to the crash tests.
    maxWorkers: 2,
  },
});
