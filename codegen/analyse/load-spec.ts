/**
 * @module Stage 1: parse a spec file's YAML, keeping source positions.
 *
 * The parsed document is kept beside the plain value so later stages can
 * point diagnostics at the exact key or value a problem lives in.
 */

import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from "yaml";
import type { Diagnostic } from "./diagnostics.js";

/** A path into the spec value: map keys and sequence indexes. */
export type SpecPath = readonly (string | number)[];

/** Finds the 1-based line and column of a path in the source. */
export interface SourceLocator {
  /** `key` points at a map entry's key (the default), `value` at its value. */
  locate(path: SpecPath, at?: "key" | "value"): { line: number; column: number };
}

/** One spec file, parsed. `value` is undefined when the YAML was unusable. */
export interface LoadedSpec {
  readonly file: string;
  readonly source: string;
  readonly value: unknown;
  readonly locator: SourceLocator;
  readonly diagnostics: readonly Diagnostic[];
}

function keyOf(node: unknown): unknown {
  return isScalar(node) ? node.value : node;
}

function makeLocator(doc: Document, counter: LineCounter): SourceLocator {
  const pos = (offset: number) => {
    const p = counter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  return {
    locate(path, at = "key") {
      let node: unknown = doc.contents;
      let best = 0;
      for (const [i, seg] of path.entries()) {
        const last = i === path.length - 1;
        if (isMap(node)) {
          const pair = node.items.find((p) => isPair(p) && String(keyOf(p.key)) === String(seg));
          if (pair === undefined) break;
          const keyNode = pair.key as Node | null;
          if (keyNode?.range) best = keyNode.range[0];
          if (last && at === "key") return pos(best);
          node = pair.value;
        } else if (isSeq(node) && /^\d+$/.test(String(seg))) {
          node = node.items[Number(seg)];
        } else {
          break;
        }
        const range = (node as Node | null | undefined)?.range;
        if (range !== undefined && range !== null) best = range[0];
        if (last) return pos(best);
      }
      return pos(best);
    },
  };
}

/** Parses one spec file. Never throws; problems come back as diagnostics. */
export function loadSpec(file: string, source: string): LoadedSpec {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const diagnostics: Diagnostic[] = [];
  for (const e of [...doc.errors, ...doc.warnings]) {
    const p = lineCounter.linePos(e.pos[0]);
    const duplicate = e.code === "DUPLICATE_KEY";
    diagnostics.push({
      code: duplicate ? "DUPLICATE_KEY" : "YAML_SYNTAX",
      severity: doc.errors.includes(e as never) ? "error" : "warning",
      file,
      line: p.line,
      column: p.col,
      message: duplicate
        ? "this key appears twice in the same map; remove or rename one of them"
        : `${e.message.split("\n")[0]}; fix the YAML syntax here`,
    });
  }
  const usable = doc.errors.length === 0;
  return {
    file,
    source,
    value: usable ? doc.toJS({ maxAliasCount: 100 }) : undefined,
    locator: makeLocator(doc, lineCounter),
    diagnostics,
  };
}
