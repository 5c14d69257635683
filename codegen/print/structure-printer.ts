/**
 * @module Prints ts-morph statement structures to text without ts-morph.
 *
 * Loading ts-morph (and the TypeScript compiler it bundles) and parsing
 * every printed file back into a syntax tree took about half of a cold
 * generation. The generator uses a small subset of structures (type
 * aliases, interfaces with properties and methods, functions, imports, and
 * statements given as text), so this module prints that subset itself,
 * through the same `code-block-writer` ts-morph writes with, making the
 * same writer calls in the same order as ts-morph's structure printers.
 *
 * The result must be byte-identical to the ts-morph path, so this module
 * refuses (returns undefined) whenever it is not sure: a structure kind or
 * property outside the subset, or a printed statement that is not exactly
 * one top-level statement whose text a parser would split the same way
 * (see `singleStatement`). The caller then falls back to ts-morph. Tests
 * compare both paths on every fixture.
 */

import { createRequire } from "node:module";
import type CodeBlockWriterType from "code-block-writer";
import type { ImportDeclarationStructure, OptionalKind, StatementStructures } from "ts-morph";
import { singleStatement, WHITESPACE } from "./single-statement.js";
import { STRUCTURE_KIND } from "./structure-kind.js";

export { singleStatement } from "./single-statement.js";
export { STRUCTURE_KIND } from "./structure-kind.js";

type Writer = CodeBlockWriterType;
type WriterClass = new (opts: { newLine: "\n"; indentNumberOfSpaces: number; useTabs: boolean; useSingleQuote: boolean }) => Writer;

let writerClass: WriterClass | undefined;

/** The code-block-writer ts-morph itself depends on, resolved from ts-morph's folder without loading ts-morph. */
function newWriter(): Writer {
  if (writerClass === undefined) {
    const require = createRequire(import.meta.url);
    const fromTsMorph = createRequire(require.resolve("ts-morph"));
    const mod = fromTsMorph("code-block-writer") as { default?: WriterClass } & WriterClass;
    writerClass = mod.default ?? mod;
  }
  // The manipulation settings of the generator's ts-morph project: two spaces, LF, double quotes.
  return new writerClass({ newLine: "\n", indentNumberOfSpaces: 2, useTabs: false, useSingleQuote: false });
}

/** Thrown inside the printer when a structure is outside the supported subset. */
class Unsupported extends Error {}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Rejects a structure carrying any set property outside `allowed`. */
function only(s: unknown, allowed: readonly string[]): Obj {
  if (!isObj(s)) throw new Unsupported();
  for (const [k, v] of Object.entries(s)) if (v !== undefined && !allowed.includes(k)) throw new Unsupported();
  return s;
}

function str(v: unknown): string {
  if (typeof v !== "string") throw new Unsupported();
  return v;
}

function optStr(v: unknown): string | undefined {
  return v === undefined || v === null ? undefined : str(v);
}

function list(v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Unsupported();
  return v;
}

function isBlank(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (!WHITESPACE.has(s.charCodeAt(i))) return false;
  return true;
}

/** The text written since `start`, without flattening the writer (which would copy the whole file per item). */
function writtenSince(w: Writer, start: number): string {
  const codes: number[] = [];
  w.iterateLastCharCodes((c, index) => {
    if (index < start) return true;
    codes.push(c);
    return undefined;
  });
  codes.reverse();
  let out = "";
  for (let i = 0; i < codes.length; i += 4096) out += String.fromCharCode(...codes.slice(i, i + 4096));
  return out;
}

/** Text printed through a fresh writer, as ts-morph's `getText` does for type and constraint texts. */
function textOf(text: string): string {
  const w = newWriter();
  w.write(text);
  return w.toString();
}

function isLastNonWhitespaceCharCloseBrace(w: Writer): boolean {
  return (
    w.iterateLastCharCodes((c) => {
      if (c === 0x7d) return true;
      if (WHITESPACE.has(c)) return undefined;
      return false;
    }) ?? false
  );
}

/**
 * Where ts-morph appends a separating comma after an item: after its last
 * token. Simple item texts only (no comments, templates or regular
 * expressions, where the token scan it uses could disagree).
 */
function appendCommaPos(text: string): number {
  if (/[/`]/.test(text)) throw new Unsupported();
  const end = text.trimEnd().length;
  if (end === 0) return -1;
  return text[end - 1] === "," ? -1 : end;
}

/** ts-morph's comma-separated list printing, including its deferred comma insertion. */
function commaSeparated(w: Writer, items: readonly unknown[], print: (item: unknown) => void): void {
  const positions: Array<number | false> = [];
  for (let i = 0; i < items.length; i++) {
    if (i > 0) w.spaceIfLastNot();
    const start = w.getLength();
    print(items[i]);
    const printed = writtenSince(w, start);
    const pos = appendCommaPos(printed);
    positions.push(pos === -1 ? false : pos + start);
  }
  let foundFirst = false;
  for (let i = positions.length - 1; i >= 0; i--) {
    const pos = positions[i];
    if (pos === false || pos === undefined) continue;
    if (!foundFirst) foundFirst = true;
    else w.unsafeInsert(pos, ",");
  }
}

function printDocs(w: Writer, docs: unknown): void {
  for (const doc of list(docs)) {
    w.closeComment();
    const text = str(doc);
    const lines = text.split(/\r?\n/);
    const startIndex = lines[0]?.length === 0 ? 1 : 0;
    const single = lines.length <= 1;
    w.write("/**");
    if (single) w.space();
    else w.newLine();
    if (single) w.write(lines[startIndex] ?? "");
    else {
      for (let i = startIndex; i < lines.length; i++) {
        w.write(" *");
        const line = lines[i] ?? "";
        if (line.length > 0) w.write(` ${line}`);
        w.newLine();
      }
    }
    w.spaceIfLastNot();
    w.write("*/");
    w.newLine();
  }
}

function printModifiers(w: Writer, s: Obj): void {
  if (s["isDefaultExport"] === true) w.write("export default ");
  else if (s["isExported"] === true) w.write("export ");
  if (s["isAsync"] === true) w.write("async ");
  if (s["isReadonly"] === true) w.write("readonly ");
}

/** `sep type` with a hanging indent, as ts-morph's typed-node printer. */
function printTyped(w: Writer, type: unknown, sep: string, alwaysWrite = false): void {
  if ((type === undefined || type === null) && !alwaysWrite) return;
  const text = textOf(optStr(type) ?? "any");
  if (!isBlank(text)) w.hangingIndent(() => w.write(`${sep} ${text}`));
}

function printTypeParameters(w: Writer, params: unknown): void {
  const items = list(params);
  if (items.length === 0) return;
  w.write("<");
  commaSeparated(w, items, (p) => {
    w.closeComment();
    if (typeof p === "string") {
      w.write(p);
      return;
    }
    const s = only(p, ["name", "constraint", "default", "kind"]);
    if (s["kind"] !== undefined && s["kind"] !== STRUCTURE_KIND.TypeParameter) throw new Unsupported();
    w.hangingIndent(() => {
      w.write(str(s["name"]));
      const constraint = optStr(s["constraint"]);
      if (constraint !== undefined) {
        const text = textOf(constraint);
        if (!isBlank(text)) w.write(` extends ${text}`);
      }
      const dflt = optStr(s["default"]);
      if (dflt !== undefined) {
        const text = textOf(dflt);
        if (!isBlank(text)) w.write(` = ${text}`);
      }
    });
  });
  w.write(">");
}

function printParameters(w: Writer, params: unknown): void {
  w.write("(");
  const items = list(params);
  if (items.length > 0) {
    w.hangingIndent(() =>
      commaSeparated(w, items, (p) => {
        const s = only(p, ["name", "type", "hasQuestionToken", "isRestParameter", "kind"]);
        if (s["kind"] !== undefined && s["kind"] !== STRUCTURE_KIND.Parameter) throw new Unsupported();
        w.closeComment();
        if (s["isRestParameter"] === true) w.write("...");
        w.write(str(s["name"]));
        const question = s["hasQuestionToken"] === true;
        if (question) w.write("?");
        printTyped(w, s["type"], ":", question);
      }),
    );
  }
  w.write(")");
}

function printReturnType(w: Writer, type: unknown): void {
  if (type === undefined || type === null) return;
  const text = textOf(str(type));
  if (!isBlank(text)) w.hangingIndent(() => w.write(`: ${text}`));
}

function printProperty(w: Writer, p: unknown): void {
  const s = only(p, ["name", "type", "docs", "isReadonly", "hasQuestionToken", "kind"]);
  if (s["kind"] !== undefined && s["kind"] !== STRUCTURE_KIND.PropertySignature) throw new Unsupported();
  w.closeComment();
  printDocs(w, s["docs"]);
  printModifiers(w, { isReadonly: s["isReadonly"] });
  w.write(str(s["name"]));
  if (s["hasQuestionToken"] === true) w.write("?");
  printTyped(w, s["type"], ":");
  w.write(";");
}

function printMethod(w: Writer, m: unknown): void {
  const s = only(m, ["name", "docs", "parameters", "returnType", "typeParameters", "hasQuestionToken", "kind"]);
  if (s["kind"] !== undefined && s["kind"] !== STRUCTURE_KIND.MethodSignature) throw new Unsupported();
  w.closeComment();
  printDocs(w, s["docs"]);
  w.write(str(s["name"]));
  if (s["hasQuestionToken"] === true) w.write("?");
  printTypeParameters(w, s["typeParameters"]);
  printParameters(w, s["parameters"]);
  printReturnType(w, s["returnType"]);
  w.write(";");
}

function printInterface(w: Writer, s: Obj): void {
  only(s, ["kind", "name", "isExported", "isDefaultExport", "docs", "typeParameters", "extends", "properties", "methods"]);
  printDocs(w, s["docs"]);
  printModifiers(w, s);
  w.write(`interface ${str(s["name"])}`);
  printTypeParameters(w, s["typeParameters"]);
  w.space();
  const ext = s["extends"];
  if (ext !== undefined && ext !== null) {
    const text = Array.isArray(ext) ? ext.map((e) => textOf(str(e))).join(", ") : textOf(str(ext));
    if (!isBlank(text)) w.hangingIndent(() => w.write(`extends ${text} `));
  }
  w.inlineBlock(() => {
    const properties = list(s["properties"]);
    const methods = list(s["methods"]);
    if (properties.length > 0 && !w.isAtStartOfFirstLineOfBlock()) w.newLine();
    properties.forEach((p, i) => {
      w.conditionalNewLine(i > 0);
      printProperty(w, p);
    });
    if (methods.length > 0 && !w.isAtStartOfFirstLineOfBlock()) w.newLine();
    methods.forEach((m, i) => {
      w.conditionalNewLine(i > 0);
      printMethod(w, m);
    });
  });
}

function printTypeAlias(w: Writer, s: Obj): void {
  only(s, ["kind", "name", "isExported", "isDefaultExport", "docs", "typeParameters", "type"]);
  printDocs(w, s["docs"]);
  printModifiers(w, s);
  w.write(`type ${str(s["name"])}`);
  printTypeParameters(w, s["typeParameters"]);
  printTyped(w, s["type"], " =");
  w.write(";");
}

function printFunction(w: Writer, s: Obj): void {
  only(s, ["kind", "name", "isExported", "isDefaultExport", "isAsync", "docs", "typeParameters", "parameters", "returnType", "statements"]);
  printDocs(w, s["docs"]);
  printModifiers(w, s);
  w.write("function");
  const name = optStr(s["name"]);
  if (name !== undefined && !isBlank(name)) w.write(` ${name}`);
  printTypeParameters(w, s["typeParameters"]);
  printParameters(w, s["parameters"]);
  printReturnType(w, s["returnType"]);
  w.space().inlineBlock(() => {
    const body = s["statements"];
    if (typeof body === "string") w.write(body);
    else printStatementList(w, list(body), () => undefined);
  });
}

function printImport(w: Writer, s: Obj): void {
  only(s, ["kind", "moduleSpecifier", "namedImports", "namespaceImport", "defaultImport", "isTypeOnly"]);
  const named = list(s["namedImports"]);
  const namespace = optStr(s["namespaceImport"]);
  const dflt = optStr(s["defaultImport"]);
  if (named.length > 0 && namespace !== undefined) throw new Unsupported();
  w.write("import");
  if (s["isTypeOnly"] === true) w.write(" type");
  if (dflt !== undefined) {
    w.write(` ${dflt}`);
    w.conditionalWrite(named.length > 0 || namespace !== undefined, ",");
  }
  if (namespace !== undefined) w.write(` * as ${namespace}`);
  if (named.length > 0) {
    w.space();
    w.write("{");
    // Plain identifiers (all the emitters import) come out as ts-morph prints them, without its
    // one-insertion-per-comma pass, which is quadratic in a long list.
    const text = named.every((n) => typeof n === "string" && IDENTIFIER.test(n)) ? named.join(", ") : importList(named);
    if (!text.startsWith("\n")) w.space();
    w.write(text);
    if (!text.endsWith("\n")) w.space();
    w.write("}");
  }
  w.conditionalWrite(dflt !== undefined || named.length > 0 || namespace !== undefined, " from");
  w.write(" ");
  w.quote(str(s["moduleSpecifier"]));
  w.write(";");
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function importList(named: readonly unknown[]): string {
  const inner = newWriter();
  commaSeparated(inner, named, (n) => {
    inner.closeComment();
    const name = str(n);
    // A multi-line specifier would get a queued indent from ts-morph.
    if (/[\r\n]/.test(name)) throw new Unsupported();
    inner.write(name);
  });
  return inner.toString();
}

/** ts-morph's statement-list printing; `mark` receives each statement's printed range. */
function printStatementList(w: Writer, statements: readonly unknown[], mark: (start: number, end: number) => void): void {
  for (const statement of statements) {
    if (isLastNonWhitespaceCharCloseBrace(w)) w.blankLineIfLastNot();
    else if (!w.isAtStartOfFirstLineOfBlock()) w.newLineIfLastNot();
    const start = w.getLength();
    if (typeof statement === "string") {
      w.write(statement);
    } else {
      if (!isObj(statement)) throw new Unsupported();
      const s = statement;
      const blankBefore = () => {
        if (!w.isAtStartOfFirstLineOfBlock()) w.blankLineIfLastNot();
      };
      switch (s["kind"]) {
        case STRUCTURE_KIND.Function:
          blankBefore();
          w.closeComment();
          printFunction(w, s);
          break;
        case STRUCTURE_KIND.Interface:
          blankBefore();
          w.closeComment();
          printInterface(w, s);
          break;
        case STRUCTURE_KIND.TypeAlias:
          w.closeComment();
          printTypeAlias(w, s);
          break;
        case STRUCTURE_KIND.ImportDeclaration:
          w.closeComment();
          printImport(w, s);
          break;
        default:
          throw new Unsupported();
      }
    }
    mark(start, w.getLength());
  }
}

/** The printed text of a file's imports and of each statement, trimmed; undefined when outside the supported subset. */
export interface PrintedStatements {
  readonly imports: string;
  readonly statements: readonly string[];
}

/**
 * Prints imports and statements as ts-morph would (each statement's text as
 * its parsed node would report it, trimmed), or undefined when unsure.
 */
export function printStatements(
  imports: readonly OptionalKind<ImportDeclarationStructure>[],
  statements: ReadonlyArray<string | StatementStructures>,
): PrintedStatements | undefined {
  try {
    const iw = newWriter();
    printStatementList(
      iw,
      imports.map((i) => ({ ...i, kind: STRUCTURE_KIND.ImportDeclaration })),
      () => undefined,
    );
    const w = newWriter();
    const ranges: Array<[number, number]> = [];
    printStatementList(w, statements, (start, end) => ranges.push([start, end]));
    const text = w.toString();
    const out: string[] = [];
    for (const [start, end] of ranges) {
      const s = text.slice(start, end);
      if (!singleStatement(s)) return undefined;
      out.push(s.trim());
    }
    return { imports: iw.toString().trim(), statements: out };
  } catch (e) {
    if (e instanceof Unsupported) return undefined;
    throw e;
  }
}
