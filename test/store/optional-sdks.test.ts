/**
 * @module The package loads without the optional cloud SDKs: no module of
 * runtime/ imports @azure/* or @google-cloud/* at load time (type-only
 * imports vanish at compile time; the stores import their SDK on first use).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ts } from "ts-morph";
import { describe, expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../support/load.js";

const root = fileURLToPath(new URL("../../runtime", import.meta.url));
const OPTIONAL = /^(@azure\/|@google-cloud\/)/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [join(dir, e.name)] : [],
  );
}

/** Specifiers of the imports of module text `text` that stay in the emitted JavaScript. */
function runtimeImports(text: string): string[] {
  const source = ts.createSourceFile("module.ts", text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly = node.importClause?.isTypeOnly === true;
      const bindings = node.importClause?.namedBindings;
      const allTypes =
        bindings !== undefined &&
        ts.isNamedImports(bindings) &&
        bindings.elements.length > 0 &&
        bindings.elements.every((e) => e.isTypeOnly) &&
        node.importClause?.name === undefined;
      if (!typeOnly && !allTypes) out.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier) && !node.isTypeOnly) {
      out.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      // A literal dynamic import is loaded lazily, but bundlers resolve it eagerly; keep them out too.
      out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

describe("optional cloud SDKs", () => {
  it("are never imported by runtime/ at load time", { timeout: HEAVY_TEST_MS }, () => {
    const offenders = sources(root).flatMap((file) =>
      runtimeImports(readFileSync(file, "utf8"))
        .filter((s) => OPTIONAL.test(s))
        .map((s) => `${relative(root, file)} imports ${s}`),
    );
    expect(offenders).toEqual([]);
  });

  it("the check tells value imports from type-only ones (so it can fail)", () => {
    expect(runtimeImports('import { BlobServiceClient } from "@azure/storage-blob";')).toEqual(["@azure/storage-blob"]);
    expect(runtimeImports('import * as gcs from "@google-cloud/storage";')).toEqual(["@google-cloud/storage"]);
    expect(runtimeImports('export { Storage } from "@google-cloud/storage";')).toEqual(["@google-cloud/storage"]);
    expect(runtimeImports('const m = await import("@azure/identity");')).toEqual(["@azure/identity"]);
    expect(runtimeImports('import type { ContainerClient } from "@azure/storage-blob";')).toEqual([]);
    expect(runtimeImports('import { type Bucket } from "@google-cloud/storage";')).toEqual([]);
    expect(runtimeImports('type Sdk = typeof import("@azure/storage-blob");')).toEqual([]);
  });
});
