/**
 * @module Which test files run in a process of their own: a file that
 * mocks, counts what its process holds, or names a source's process-wide
 * state is picked; a file that only runs the library is not.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { filesNeedingOwnProcess, filesUnder, needsOwnProcess, processStateNames } from "./isolated-files.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

describe("isolated files", () => {
  it("picks files that mock modules or read what their process holds, and leaves plain ones shared", () => {
    expect(needsOwnProcess('vi.mock("node:fs", () => ({}));')).toBe(true);
    expect(needsOwnProcess('readdirSync("/proc/self/fd")')).toBe(true);
    expect(needsOwnProcess("const t = process.getActiveResourcesInfo();")).toBe(true);
    expect(needsOwnProcess('import { trace } from "@opentelemetry/api";')).toBe(true);
    expect(needsOwnProcess("// test: own process")).toBe(true);
    expect(needsOwnProcess('import { Queue } from "taquba";\nawait queue.close();')).toBe(false);
  });

  it("finds the process-wide state sources export for tests, and picks the files naming it", () => {
    const dir = mkdtempSync(join(tmpdir(), "isolated-files-"));
    try {
      const source = join(dir, "tuned.ts");
      writeFileSync(
        source,
        "export const pauseTuning = { ms: 4 };\nexport let switchedOn = false;\nexport const LIMITS = { a: 1 };\nconst hidden = { b: 2 };\n",
      );
      const names = processStateNames([source]);
      expect(names).toEqual(expect.arrayContaining(["pauseTuning", "switchedOn"]));
      expect(names).not.toContain("LIMITS");
      expect(names).not.toContain("hidden");
      expect(needsOwnProcess("pauseTuning.ms = 0;", names)).toBe(true);
      expect(needsOwnProcess("const pauseTunings = 1;", names)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("picks this repository's files that share module state, from their text alone", () => {
    const sources = ["runtime", "codegen"].flatMap((d) => filesUnder(root, d, ".ts")).filter((f) => !f.endsWith(".test.ts"));
    const names = processStateNames(sources);
    expect(names).toEqual(expect.arrayContaining(["stateTuning", "cursorStats", "releaseTuning"]));
    const picked = filesNeedingOwnProcess(filesUnder(root, "test", ".test.ts"), names).map((f) => f.slice(root.length));
    expect(picked).toEqual(
      expect.arrayContaining([
        "test/store/local-put-threads.test.ts",
        "test/observability/metrics.test.ts",
        "test/engine/engine-merge-mid-attack.test.ts",
        "test/queue/queue-configs-once.test.ts",
      ]),
    );
    expect(picked).not.toContain("test/queue/smoke.test.ts");
  });
});
