/**
 * A Stryker ignorer for scripts/mutation-sample.mjs: of the code its mutate
 * ranges select, only the sampled mutants' own nodes are tested. A sampled
 * mutant spanning lines (an emptied block) would otherwise bring every
 * mutant inside it into the run. MUTATION_SAMPLE_NODES names a JSON file of
 * the sampled nodes' locations ("file:line:column-line:column", lines and
 * columns from 0 as the instrumenter counts them).
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { declareValuePlugin, PluginKind } from "@stryker-mutator/api/plugin";

const file = process.env.MUTATION_SAMPLE_NODES;
const nodes = file === undefined ? [] : JSON.parse(readFileSync(file, "utf8"));
const sampled = new Set(nodes);
const byFile = new Map();
for (const n of nodes) {
  const name = n.slice(0, n.lastIndexOf(":", n.lastIndexOf("-")));
  const list = byFile.get(name.slice(0, name.lastIndexOf(":"))) ?? [];
  list.push(n);
  byFile.set(name.slice(0, name.lastIndexOf(":")), list);
}

const where = (name, loc) => `${name}:${loc.start.line - 1}:${loc.start.column}-${loc.end.line - 1}:${loc.end.column}`;
const parse = (n) => {
  const [, a, b, c, d] = /:(\d+):(\d+)-(\d+):(\d+)$/.exec(n).map(Number);
  return { start: { line: a, column: b }, end: { line: c, column: d } };
};
const contains = (outer, inner) =>
  (outer.start.line < inner.start.line || (outer.start.line === inner.start.line && outer.start.column <= inner.start.column)) &&
  (outer.end.line > inner.end.line || (outer.end.line === inner.end.line && outer.end.column >= inner.end.column));

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, "sampled-only", {
    shouldIgnore(path) {
      const loc = path.node.loc;
      if (loc === null || loc === undefined || file === undefined) return undefined;
      const name = relative(process.cwd(), loc.filename ?? path.hub?.file?.opts?.filename ?? "");
      const self = where(name, loc);
      if (sampled.has(self)) return undefined;
      // A node holding a sampled one stays, or the sampled one would be ignored with it.
      const here = { start: { line: loc.start.line - 1, column: loc.start.column }, end: { line: loc.end.line - 1, column: loc.end.column } };
      if ((byFile.get(name) ?? []).some((n) => contains(here, parse(n)))) return undefined;
      return "not in the sample";
    },
  }),
];
