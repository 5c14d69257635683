/**
 * @module Things defined once: a bound or a type that several modules need
 * lives in one module and is imported, so a change to it cannot miss a copy.
 * Each check reads the sources of runtime/ for the spelled-out definition
 * and allows it only where it lives.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sourceFiles(path));
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** The runtime modules whose text matches `pattern`, as `path:line`. */
function spelledIn(pattern: RegExp): string[] {
  const found: string[] = [];
  for (const file of sourceFiles("runtime")) {
    readFileSync(join(root, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (pattern.test(line)) found.push(`${file}:${i + 1}`);
      });
  }
  return found;
}

describe("defined once", () => {
  it("setTimeout's longest delay is MAX_TIMEOUT_MS of runtime/clock.ts, spelled nowhere else", () => {
    const found = spelledIn(/2\s*\*\*\s*31\b|2_?147_?483_?64[78]/);
    expect(found.filter((f) => !f.startsWith("runtime/clock.ts:"))).toEqual([]);
    expect(found.length).toBe(1);
  });

  it("an object filled in field by field is a Building<T> of runtime/queue/cancel-state.ts, not another spelled-out mapped type", () => {
    const found = spelledIn(/-readonly\s*\[/);
    expect(found.filter((f) => !f.startsWith("runtime/queue/cancel-state.ts:"))).toEqual([]);
    expect(found.length).toBe(1);
  });
});
