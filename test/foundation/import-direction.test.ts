/**
 * @module The direction of imports: every module of runtime/, codegen/ and
 * operator/ belongs to one layer, and imports only from its own layer or from layers
 * below it (see docs/architecture.md for what each layer holds).
 *
 * Imports are read with the TypeScript scanner (`preProcessFile`), which
 * sees static imports, re-exports, `import()` calls and `import("...")`
 * types, and ignores comments and strings.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { ts } from "ts-morph";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The layers, lowest first. A module may import from its own layer entry and
 * from any earlier rank; entries of one rank (jobs and webhooks) are peers
 * and must not import each other. Prefixes ending in `/` name folders.
 */
const LAYERS: readonly (readonly [rank: number, name: string, prefixes: readonly string[]])[] = [
  [
    0,
    "foundation",
    [
      "runtime/errors.ts",
      "runtime/clock.ts",
      "runtime/time-bounds.ts",
      "runtime/value-ranges.ts",
      "runtime/option-values.ts",
      "runtime/own-fields.ts",
      "runtime/own-layouts.ts",
      "runtime/internal-construction.ts",
      "runtime/bytes.ts",
      "runtime/redact.ts",
      "runtime/logger.ts",
      "runtime/telemetry/",
    ],
  ],
  [1, "store", ["runtime/store/"]],
  [2, "engine", ["runtime/engine/"]],
  [3, "queue", ["runtime/queue/"]],
  [4, "workflow", ["runtime/workflow/"]],
  [5, "contract", ["runtime/contract/"]],
  [6, "jobs", ["runtime/jobs/"]],
  [6, "webhooks", ["runtime/webhooks/"]],
  [7, "typed", ["runtime/typed/"]],
  [8, "client", ["runtime/client/"]],
  [9, "cluster", ["runtime/cluster/"]],
  [10, "entry", ["runtime/index.ts", "runtime/testing.ts", "runtime/generated.ts"]],
  [11, "codegen", ["codegen/"]],
  // The operator tools (CLI, dashboard) read and write through the runtime, never through the generator.
  [11, "operator", ["operator/"]],
];

interface Layer {
  readonly rank: number;
  readonly name: string;
}

function layerOf(path: string): Layer | undefined {
  let best: { layer: Layer; length: number } | undefined;
  for (const [rank, name, prefixes] of LAYERS) {
    for (const p of prefixes) {
      const hit = p.endsWith("/") ? path.startsWith(p) : path === p;
      if (hit && (best === undefined || p.length > best.length)) best = { layer: { rank, name }, length: p.length };
    }
  }
  return best?.layer;
}

/** An import of one module by another, as repository-relative paths with `/`. */
interface Edge {
  readonly from: string;
  readonly to: string;
}

/** The edges that go upward or sideways between peers, as readable lines. */
function violations(edges: readonly Edge[]): string[] {
  const found: string[] = [];
  for (const { from, to } of edges) {
    const a = layerOf(from);
    const b = layerOf(to);
    if (a === undefined || b === undefined) {
      found.push(`${from} -> ${to}: ${a === undefined ? from : to} belongs to no layer`);
    } else if (b.rank > a.rank || (b.rank === a.rank && b.name !== a.name)) {
      found.push(`${from} (${a.name}) imports ${to} (${b.name})`);
    }
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|js|mjs)$/.test(e.name) && !e.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** The relative imports of every module under runtime/ and codegen/, resolved to the imported file. */
function moduleEdges(): Edge[] {
  const files = [...sourceFiles("runtime"), ...sourceFiles("codegen"), ...sourceFiles("operator")];
  const known = new Set(files);
  const edges: Edge[] = [];
  for (const from of files) {
    const text = readFileSync(join(root, from), "utf8");
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const base = relative(root, normalize(join(root, dirname(from), fileName)))
        .split(sep)
        .join("/");
      const to = [base, base.replace(/\.js$/, ".ts")].find((c) => known.has(c));
      if (to === undefined) throw new Error(`${from} imports ${fileName}, which is not a module of the repository`);
      edges.push({ from, to });
    }
  }
  return edges;
}

/** Every import specifier of a module, relative or not. */
function specifiers(path: string): string[] {
  return ts.preProcessFile(readFileSync(join(root, path), "utf8"), true, true).importedFiles.map((f) => f.fileName);
}

/** Node built-ins that reach the disk, processes or the network. */
const IO_MODULES = /^(node:)?(fs|fs\/promises|child_process|net|http|https|http2|dgram|worker_threads)$/;

describe("import direction", () => {
  it("every module imports only from its own layer or a layer below", () => {
    const edges = moduleEdges();
    expect(edges.length).toBeGreaterThan(500);
    expect(violations(edges)).toEqual([]);
  });

  it("every module belongs to a layer", () => {
    const orphans = [...sourceFiles("runtime"), ...sourceFiles("codegen"), ...sourceFiles("operator")].filter((f) => layerOf(f) === undefined);
    expect(orphans).toEqual([]);
  });

  it("keeps the generator's IO in codegen/cli/: every other stage is pure", () => {
    // bin.js is the package's launcher (part of the cli stage, kept at the root as the package bin).
    const stages = sourceFiles("codegen").filter((f) => !f.startsWith("codegen/cli/") && f !== "codegen/bin.js");
    expect(stages.length).toBeGreaterThan(20);
    expect(
      stages.flatMap((f) =>
        specifiers(f)
          .filter((s) => IO_MODULES.test(s))
          .map((s) => `${f} imports ${s}`),
      ),
    ).toEqual([]);
    expect(IO_MODULES.test("node:fs/promises") && IO_MODULES.test("fs") && !IO_MODULES.test("node:path")).toBe(true);
  });

  it("keeps the operator tools free of the generator's optional peers, however deep the import", () => {
    // `taquba runs ...` must work in an application that installed none of them.
    const peers = ["@eslint-community/regexpp", "ajv", "diff", "ts-morph", "yaml"];
    const edges = moduleEdges();
    const reached = new Set<string>();
    const queue = sourceFiles("operator").filter((f) => !f.startsWith("operator/dashboard/public/"));
    expect(queue.length).toBeGreaterThan(3);
    while (queue.length > 0) {
      const f = queue.pop()!;
      if (reached.has(f)) continue;
      reached.add(f);
      for (const e of edges) if (e.from === f) queue.push(e.to);
    }
    expect(reached.has("runtime/client/taquba-client.ts")).toBe(true);
    const found = [...reached].flatMap((f) =>
      specifiers(f)
        .filter((s) => peers.some((p) => s === p || s.startsWith(`${p}/`)))
        .map((s) => `${f} imports ${s}`),
    );
    expect(found).toEqual([]);
  });

  it("keeps runtime/contract/ pure: no packages, no Node built-ins", () => {
    const contract = sourceFiles("runtime/contract");
    expect(contract.length).toBeGreaterThan(5);
    expect(
      contract.flatMap((f) =>
        specifiers(f)
          .filter((s) => !s.startsWith("."))
          .map((s) => `${f} imports ${s}`),
      ),
    ).toEqual([]);
  });

  it("reports an upward import, an import between peers and a module outside every layer", () => {
    expect(
      violations([
        { from: "runtime/workflow/steps/step-processor.ts", to: "runtime/typed/workflow-dispatcher.ts" },
        { from: "runtime/jobs/job-codec.ts", to: "runtime/webhooks/webhook-worker.ts" },
        { from: "runtime/store/keys.ts", to: "runtime/errors.ts" },
        { from: "runtime/typed/job-runner.ts", to: "runtime/jobs/job-handle.ts" },
        { from: "runtime/queue/queue.ts", to: "runtime/elsewhere/x.ts" },
        { from: "runtime/contract/job-definition.ts", to: "codegen/generate.ts" },
      ]),
    ).toEqual([
      "runtime/workflow/steps/step-processor.ts (workflow) imports runtime/typed/workflow-dispatcher.ts (typed)",
      "runtime/jobs/job-codec.ts (jobs) imports runtime/webhooks/webhook-worker.ts (webhooks)",
      "runtime/queue/queue.ts -> runtime/elsewhere/x.ts: runtime/elsewhere/x.ts belongs to no layer",
      "runtime/contract/job-definition.ts (contract) imports codegen/generate.ts (codegen)",
    ]);
  });
});
