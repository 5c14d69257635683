/**
 * The documentation's code is real. For the README, CONTRIBUTING.md and
 * every file in docs/: each TypeScript or YAML block is an excerpt of a file
 * that CI compiles or loads (its first line names the file), or, headed
 * `file:`, that whole file after its header comment (the README's quick
 * start, runnable as pasted); every `npm run` names a script of this package
 * or one that `taquba init` writes; every `npx taquba` command exists; and
 * every relative link resolves.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { INIT_SCRIPTS } from "../../codegen/cli/init-templates.js";
import { COMMANDS } from "../../operator/cli/commands/index.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Topic files other work adds to docs/, linked from the README's map
 * before they land. A link to one passes only while the file is missing;
 * once it exists, the link is checked like any other. Empty this list once
 * they all exist.
 */

const documents = [
  "README.md",
  "CONTRIBUTING.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

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

/** A source file without its leading `/** ... *\/` comment: what a reader pastes. */
function withoutHeader(source: string): string {
  return source.replace(/^\/\*\*[\s\S]*?\*\/\n/, "").trim();
}

const scripts = Object.keys((JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { scripts: Record<string, string> }).scripts);
// The generator's commands, and the operator commands' first words (runs, signal, dashboard, ...).
const TAQUBA_COMMANDS = ["init", "codegen", ...new Set(COMMANDS.map((c) => c.path[0]!))];

describe("README", () => {
  const readme = readFileSync(`${root}README.md`, "utf8");

  it("has code blocks to check and stays under 250 lines", () => {
    expect(blocks(readme).filter((b) => b.lang === "ts").length).toBeGreaterThan(3);
    expect(readme.split("\n").length).toBeLessThan(250);
  });

  it("shows the quick start as a whole program", () => {
    expect(blocks(readme).some((b) => b.lines[0] === "// file: examples/quickstart.ts")).toBe(true);
  });
});

for (const doc of documents) {
  describe(doc, () => {
    const text = readFileSync(join(root, doc), "utf8");
    const all = blocks(text);

    for (const b of all.filter((b) => ["ts", "typescript", "yaml"].includes(b.lang))) {
      it(`block at line ${b.line} is an excerpt of a checked file`, () => {
        const header = /^(?:\/\/|#) (excerpt|file): (\S+)$/.exec(b.lines[0] ?? "");
        expect(header, `the block at ${doc} line ${b.line} must start with an "excerpt: <file>" or "file: <file>" line`).not.toBeNull();
        const file = `${root}${header![2]}`;
        expect(existsSync(file), `${header![2]} exists`).toBe(true);
        const source = readFileSync(file, "utf8");
        if (header![1] === "file") {
          expect(b.lines.slice(1).join("\n").trim(), `${doc} line ${b.line} is the whole of ${header![2]}`).toBe(withoutHeader(source));
        } else {
          expect(containsRun(source.split("\n"), b.lines.slice(1)), `${doc} line ${b.line}: the excerpt matches ${header![2]}`).toBe(true);
        }
      });
    }

    it("mentions only npm scripts and taquba commands that exist", () => {
      for (const [, s] of text.matchAll(/npm run ([\w:-]+)/g)) expect([...scripts, ...Object.keys(INIT_SCRIPTS)], `npm run ${s}`).toContain(s);
      for (const [, c] of text.matchAll(/npx taquba ([\w-]+)/g)) expect(TAQUBA_COMMANDS, `npx taquba ${c}`).toContain(c);
    });

    it("links only to files that exist", () => {
      const links = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
      for (const l of links) {
        const target = join(root, dirname(doc), l);
        expect(existsSync(target), `${doc} links to ${l}`).toBe(true);
      }
    });
  });
}
