/**
 * @module Stage 1: parse a spec file's YAML, keeping source positions.
 *
 * The parsed document is kept beside the plain value so later stages can
 * point diagnostics at the exact key or value a problem lives in.
 */

import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from "yaml";
import type { Diagnostic, DiagnosticCode } from "./diagnostics.js";

/** The largest spec file read, in characters; real specs are a few kilobytes. */
export const MAX_SPEC_CHARS = 1_000_000;
/** The most values a spec may hold once its aliases are expanded (a billion-laughs document holds billions). */
export const MAX_SPEC_NODES = 200_000;
/** Explicit tags that keep to plain JSON data; anything else (`!!binary`, `!!set`, `!!timestamp`, custom tags) is refused. */
const PLAIN_TAGS = new Set([
  "tag:yaml.org,2002:str",
  "tag:yaml.org,2002:int",
  "tag:yaml.org,2002:float",
  "tag:yaml.org,2002:bool",
  "tag:yaml.org,2002:null",
  "tag:yaml.org,2002:map",
  "tag:yaml.org,2002:seq",
]);

/**
 * Problems the YAML parser lets through but later stages must not see:
 * keys named `__proto__` (assigning one replaces an object's prototype, so
 * the entry would vanish from the generated code), tags that build
 * non-JSON values, and aliases that expand past MAX_SPEC_NODES.
 */
function unsafeStructure(doc: Document, at: (offset: number) => { line: number; column: number }, file: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const report = (code: DiagnosticCode, node: Node | null | undefined, message: string) => {
    const p = at(node?.range?.[0] ?? 0);
    out.push({ code, severity: "error", file, line: p.line, column: p.column, message });
  };
  const sizes = new Map<unknown, number>();
  let limitReported = false;
  // Values under `node`, aliases counted as what they expand to; reports each problem node once.
  const size = (node: unknown): number => {
    const known = sizes.get(node);
    if (known !== undefined) return known;
    sizes.set(node, 1); // a cycle counts once instead of recursing forever
    let n = 1;
    if (isAlias(node)) {
      n = size(node.resolve(doc));
    } else if (isMap(node) || isSeq(node)) {
      if (node.tag !== undefined && !PLAIN_TAGS.has(node.tag)) report("UNSUPPORTED_TAG", node, `the tag ${node.tag} is not plain JSON data; remove it`);
      for (const item of node.items) {
        const value = isPair(item) ? item.value : item;
        if (isPair(item)) {
          if (isScalar(item.key) && item.key.value === "__proto__") {
            report(
              "FORBIDDEN_NAME",
              item.key,
              `"__proto__" cannot be a name in a spec (JavaScript objects treat it as their prototype, so it would be dropped); rename it`,
            );
          }
          n += size(item.key);
        }
        n += size(value);
        if (n > MAX_SPEC_NODES) {
          // Reported at the innermost entry that crosses the limit: the alias doing the expanding, if any.
          if (!limitReported) {
            limitReported = true;
            const message = isAlias(value)
              ? `this alias takes the spec past ${MAX_SPEC_NODES} values once expanded; write the repeated part out or share it through "types" and "$ref"`
              : `the spec holds more than ${MAX_SPEC_NODES} values by here; split it into several spec files`;
            report("SPEC_TOO_LARGE", (value ?? node) as Node, message);
          }
          break;
        }
      }
    } else if (isScalar(node) && node.tag !== undefined && !PLAIN_TAGS.has(node.tag)) {
      report("UNSUPPORTED_TAG", node, `the tag ${node.tag} is not plain JSON data; remove it and write the value as a string`);
    }
    sizes.set(node, n);
    return n;
  };
  size(doc.contents);
  return out;
}

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
  if (source.length > MAX_SPEC_CHARS) {
    return {
      file,
      source,
      value: undefined,
      locator: { locate: () => ({ line: 1, column: 1 }) },
      diagnostics: [
        {
          code: "SPEC_TOO_LARGE",
          severity: "error",
          file,
          line: 1,
          column: 1,
          message: `the spec is ${source.length} characters, more than the ${MAX_SPEC_CHARS} a spec may hold; split it into several spec files`,
        },
      ],
    };
  }
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
      message: duplicate ? "this key appears twice in the same map; remove or rename one of them" : `${e.message.split("\n")[0]}; fix the YAML syntax here`,
    });
  }
  if (doc.errors.length === 0) {
    diagnostics.push(
      ...unsafeStructure(
        doc,
        (offset) => {
          const p = lineCounter.linePos(offset);
          return { line: p.line, column: p.col };
        },
        file,
      ),
    );
  }
  let value: unknown;
  if (!diagnostics.some((d) => d.severity === "error")) {
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      // The parser's own expansion guard: a problem in the spec, not a crash.
      diagnostics.push({
        code: "SPEC_TOO_LARGE",
        severity: "error",
        file,
        line: 1,
        column: 1,
        message: `the spec's aliases expand too much (${e instanceof Error ? e.message : String(e)}); write the repeated parts out`,
      });
    }
  }
  return {
    file,
    source,
    value,
    locator: makeLocator(doc, lineCounter),
    diagnostics,
  };
}
