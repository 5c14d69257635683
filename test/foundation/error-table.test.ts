/**
 * @module The error table of docs/errors.md against the code: every class
 * deriving from `TaqubaError` in runtime/ has a row per code it carries,
 * with that code and its retryable flag; every code of the closed union is
 * used by exactly one class; and permanence of a thrown error follows
 * `retryable` alone.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { ClosedError, PermanentError, StepError, StoreUnavailableError, TAQUBA_ERROR_CODES, TaqubaError, ValidationError } from "taquba";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(`${dir}/${e.name}`) : e.name.endsWith(".ts") ? [`${dir}/${e.name}`] : [],
  );
}

/** Every exported class of runtime/ whose base chain reaches TaqubaError, with the module that declares it. */
function errorClassesInSource(): Map<string, string> {
  const declared = new Map<string, { base: string; file: string }>();
  for (const file of sourceFiles("runtime")) {
    for (const m of readFileSync(join(root, file), "utf8").matchAll(/export class (\w+)(?:<[^>]*>)? extends (\w+)/g)) {
      declared.set(m[1]!, { base: m[2]!, file });
    }
  }
  const found = new Map<string, string>();
  for (const [name, { file }] of declared) {
    let base: string | undefined = name;
    while (base !== undefined && base !== "TaqubaError") base = declared.get(base)?.base;
    if (base === "TaqubaError" && name !== "TaqubaError") found.set(name, file);
  }
  return found;
}

/** Instances of a class, one per code it can carry; most take message parts only. */
function instancesOf(name: string, C: new (...args: never[]) => TaqubaError): TaqubaError[] {
  if (name === "StepError") return [StepError.transient(new Error("x")), StepError.permanent(new Error("x"))];
  const special: Record<string, unknown[]> = { InvalidWebhookRequestError: [["x"]], ValidationError: ["x", ["x"]] };
  const args = special[name] ?? ["x", "x", "x", "x"];
  return [Reflect.construct(C, args) as TaqubaError];
}

interface Row {
  readonly code: string;
  readonly cls: string;
  readonly retryable: boolean;
}

function documentedRows(): Row[] {
  const text = readFileSync(join(root, "docs/errors.md"), "utf8");
  return [...text.matchAll(/^\| `(\w+)` \| `(\w+)` \| (yes|no) \| .+ \|$/gm)].map((m) => ({ code: m[1]!, cls: m[2]!, retryable: m[3] === "yes" }));
}

describe("error table", () => {
  it("has one row per class and code, with the code and retryable flag the class carries", async () => {
    const classes = errorClassesInSource();
    expect(classes.size).toBeGreaterThan(35);
    const actual: Row[] = [];
    for (const [name, file] of classes) {
      const mod = (await import(pathToFileURL(join(root, file)).href)) as Record<string, new (...args: never[]) => TaqubaError>;
      const C = mod[name];
      expect(C, `${name} is exported by ${file}`).toBeDefined();
      for (const e of instancesOf(name, C!)) {
        expect(e).toBeInstanceOf(TaqubaError);
        actual.push({ code: e.code, cls: name, retryable: e.retryable });
      }
    }
    const key = (r: Row) => `${r.code} ${r.cls} ${r.retryable ? "yes" : "no"}`;
    expect(documentedRows().map(key).sort()).toEqual(actual.map(key).sort());
  });

  it("names only classes the package root exports, so a caller can catch each by name", async () => {
    const root = (await import("taquba")) as Record<string, unknown>;
    const missing = documentedRows()
      .map((r) => r.cls)
      .filter((cls) => typeof root[cls] !== "function");
    expect(missing).toEqual([]);
  });

  it("uses every code of the closed union, each for one class", () => {
    const rows = documentedRows();
    expect(rows.map((r) => r.code).sort()).toEqual([...TAQUBA_ERROR_CODES].sort());
    expect(new Set(TAQUBA_ERROR_CODES).size).toBe(TAQUBA_ERROR_CODES.length);
  });

  it("decides a thrown error's permanence from retryable alone", () => {
    expect(StepError.kindOf(new PermanentError("x"))).toBe("permanent");
    expect(StepError.kindOf(new ValidationError("x"))).toBe("permanent");
    expect(StepError.kindOf(new ClosedError("the queue"))).toBe("permanent");
    expect(StepError.kindOf(new StoreUnavailableError("get", "k", new Error("x")))).toBe("transient");
    expect(StepError.kindOf(new Error("x"))).toBe("transient");
    expect(StepError.kindOf("a string")).toBe("transient");
    expect(StepError.kindOf(StepError.transient(new ValidationError("x")))).toBe("transient");
    expect(StepError.from(new PermanentError("x")).kind).toBe("permanent");
    expect(StepError.from(new RangeError("x")).kind).toBe("transient");
  });
});
