/**
 * The README's code is real: every TypeScript or YAML block is an excerpt
 * of a file that CI compiles or loads (its first line names the file), every
 * `npm run` it mentions exists, and every relative link resolves.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const readme = readFileSync(`${root}README.md`, "utf8");

interface Block {
  lang: string;
  lines: string[];
  line: number;
}

function blocks(text: string): Block[] {
  const out: Block[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    out.push({ lang: open[1]!, lines: body, line: start + 1 });
  }
  return out;
}

/** Whether `needle` (trimmed lines) occurs as a contiguous run of `hay`'s trimmed lines. */
function containsRun(hay: string[], needle: string[]): boolean {
  const h = hay.map((l) => l.trim());
  const n = needle.map((l) => l.trim());
  outer: for (let i = 0; i + n.length <= h.length; i++) {
    for (let j = 0; j < n.length; j++) if (h[i + j] !== n[j]) continue outer;
    return true;
  }
  return false;
}

const all = blocks(readme);

describe("README", () => {
  it("has code blocks to check", () => {
    expect(all.filter((b) => b.lang === "ts").length).toBeGreaterThan(3);
  });

  for (const b of all.filter((b) => ["ts", "typescript", "yaml"].includes(b.lang))) {
    it(`block at line ${b.line} is an excerpt of a checked file`, () => {
      const header = /^(?:\/\/|#) excerpt: (\S+)$/.exec(b.lines[0] ?? "");
      expect(header, `the block at README line ${b.line} must start with an "excerpt: <file>" line`).not.toBeNull();
      const file = `${root}${header![1]}`;
      expect(existsSync(file), `${header![1]} exists`).toBe(true);
      const source = readFileSync(file, "utf8").split("\n");
      expect(containsRun(source, b.lines.slice(1)), `README line ${b.line}: the excerpt matches ${header![1]}`).toBe(true);
    });
  }

  it("mentions only npm scripts that exist", () => {
    const scripts = Object.keys((JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { scripts: Record<string, string> }).scripts);
    const used = [...readme.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]!);
    expect(used.length).toBeGreaterThan(0);
    for (const s of used) expect(scripts, `npm run ${s}`).toContain(s);
  });

  it("links only to files that exist", () => {
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThan(0);
    for (const l of links) expect(existsSync(`${root}${l}`), l).toBe(true);
  });
});
