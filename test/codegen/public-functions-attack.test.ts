/**
 * @module The code generator's exported functions called with hostile
 * arguments in every position (undefined, null, NaN, Infinity, 1e30, -0, a
 * bigint, a symbol, a function, a revoked Proxy, an object whose every read
 * throws, an array with holes, a 10 MB string, lone surrogates) refuse with
 * a typed error or answer, at once: never a raw TypeError or RangeError from
 * deep inside, a hang (a string spread into ten million entries), or a NaN
 * answer. The table is every function `taquba/codegen` exports; a new one needs its fills.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HOSTILE_VALUES, hostileEscapes } from "../support/hostile-arguments.js";
import {
  analyse,
  buildLock,
  canonicalJson,
  contractHash,
  emitPackage,
  generate,
  loadSpec,
  main,
  normaliseSchema,
  renderLock,
  schemaToType,
  selfContained,
  validatorRoots,
} from "../../codegen/index.js";
import * as codegen from "../../codegen/index.js";
import { generate as generateStage } from "../../codegen/generate.js";
import { ValidationError } from "../../runtime/errors.js";

const huge = "x".repeat(10 * 1024 * 1024);

/** The shared hostile values, and what only the codegen's inputs meet: nothing, a function, an array with holes. */
const HOSTILE: readonly unknown[] = [
  undefined,
  null,
  ...HOSTILE_VALUES,
  () => {},
  // biome-ignore lint/suspicious/noSparseArray: an array with holes is the point.
  [, , 1],
];

const specFile = "test/codegen/fixtures/shop/shop.taquba.yaml";
const specText = readFileSync(new URL("fixtures/shop/shop.taquba.yaml", import.meta.url), "utf8");
const loaded = loadSpec(specFile, specText);
const { packages } = analyse([{ file: specFile, source: specText }]);
const pkg = packages[0];
if (pkg === undefined) throw new Error("the shop fixture must analyse cleanly");
const lock = buildLock(pkg);
const files = emitPackage(pkg);
const diagnostic = { code: "YAML_SYNTAX", severity: "error", file: specFile, line: 1, column: 1, message: "m" } as const;
const io = { cwd: process.cwd(), out: () => {}, err: () => {} };

/** Every function `taquba/codegen` exports: one added there is attacked here (and needs its fills below). */
const FUNCTIONS = Object.fromEntries(
  Object.entries<unknown>(codegen).filter((entry): entry is [string, (...args: never[]) => unknown] => typeof entry[1] === "function"),
);

/** Valid arguments for the positions not under attack, from the shop fixture the golden tests use. */
const FILLS: Record<string, unknown[]> = {
  analyse: [[{ file: specFile, source: specText }]],
  buildLock: [pkg],
  buildModel: [specFile, loaded.value],
  canonicalJson: [{ a: 1 }],
  checkPackage: [pkg, loaded.locator],
  compareOutput: [files, new Map()],
  compileValidators: [validatorRoots(pkg), pkg],
  contractHash: [{ a: 1 }],
  diffLocks: [lock, lock],
  emitPackage: [pkg, specText],
  generate: [[{ file: specFile, source: specText }]],
  hasDrift: [{ missing: [], changed: [], stale: [] }],
  hasErrors: [[diagnostic]],
  loadSpec: [specFile, specText],
  lockPathFor: [specFile],
  // Never a real pass: "--help" answers without touching the disk.
  main: [["--help"], io],
  normaliseSchema: [{ type: "string" }],
  parseLock: [renderLock(lock)],
  renderChange: [{ breaking: true, entry: 'job "shop.a"', at: "input", message: "m" }],
  renderDiagnostic: [diagnostic, specText],
  renderLock: [lock],
  scaffoldFiles: [packages, "./generated/index.js"],
  schemaToType: [{ type: "string" }, 0],
  selfContained: [{ type: "string" }, pkg],
  sortDiagnostics: [[diagnostic]],
  templateFields: ["{orderId}"],
  // Takes nothing: the hostile values land in a position it never reads.
  specMetaSchema: [],
  validateSpec: [loaded],
  validatorRoots: [pkg],
};

describe("taquba/codegen functions given hostile arguments", () => {
  it("every exported function is in the table with valid fills", () => {
    expect(Object.keys(FILLS).sort()).toEqual(Object.keys(FUNCTIONS).sort());
  });

  it.each(Object.entries(FUNCTIONS))("%s refuses with a typed error or answers, at once", async (name, fn) => {
    const fill = FILLS[name] ?? [];
    const escaped = await hostileEscapes(fn, fill, Math.max(1, fn.length, fill.length), HOSTILE);
    expect(escaped).toEqual([]);
  });
});

/** A schema `{ anyOf: [x, x] }` nested `levels` deep over one shared `x`: small in memory, 2^levels values once written out. */
function sharedBothWays(levels: number): Record<string, unknown> {
  let x: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < levels; i++) x = { anyOf: [x, x] };
  return x;
}

function nested(levels: number): Record<string, unknown> {
  let x: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < levels; i++) x = { type: "array", items: x };
  return x;
}

const cyclic: Record<string, unknown> = { type: "object", properties: {} };
(cyclic.properties as Record<string, unknown>).self = cyclic;
const throwing = Object.defineProperty({ type: "string" }, "title", {
  enumerable: true,
  get() {
    throw new Error("a getter that throws");
  },
});

/**
 * Schemas that are objects at the top but not JSON deeper, for the three functions that take one: each is
 * refused at the top with a ValidationError naming the path of what is wrong (not wrapped as a failure
 * from inside, nor silently dropped or written as null), at once.
 */
const HOSTILE_SCHEMAS: [string, unknown, RegExp][] = [
  ["a function in a field", { type: "object", properties: { a: () => {} } }, /^S\.properties\.a must be a JSON value, got a function$/],
  ["a function as the type", { type: () => "string" }, /^S\.type must be a JSON value, got a function$/],
  ["a bigint bound", { type: "integer", minimum: 5n }, /^S\.minimum must be a JSON value, got 5n \(a bigint\)$/],
  ["a NaN bound", { type: "number", maximum: Number.NaN }, /^S\.maximum must be a JSON value, got NaN$/],
  ["a symbol in an enum", { enum: ["a", Symbol("s")] }, /^S\.enum\[1\] must be a JSON value, got a symbol$/],
  ["undefined in an enum", { type: "string", enum: [undefined] }, /^S\.enum\[0\] must be a JSON value, got undefined$/],
  // biome-ignore lint/suspicious/noSparseArray: the hole is the point.
  ["a hole in an enum", { type: "string", enum: [, "a"] }, /^S\.enum\[0\] must be a JSON value, got undefined$/],
  [
    "a Date as a default",
    { type: "string", default: new Date(0) },
    /^S\.default must be a JSON value \(a plain object, an array or a scalar\), got an instance of Date$/,
  ],
  [
    "a Map as the properties",
    { type: "object", properties: new Map() },
    /^S\.properties must be a JSON value \(a plain object, an array or a scalar\), got an instance of Map$/,
  ],
  [
    "a revoked Proxy as the items",
    { type: "array", items: revokedProxy() },
    /^S\.items must be a JSON value \(a plain object, an array or a scalar\), got a revoked Proxy$/,
  ],
  ["a getter that throws", throwing, /^S could not be read/],
  ["a schema that contains itself", cyclic, /^S\.properties\.self refers to an object that contains it \(a cycle\); a JSON value cannot$/],
  [
    "nesting 5,000 levels deep",
    nested(5000),
    /^S\.items\.items\.[.a-z]*\.\.\. is nested more than 1000 levels deep; a contract or schema is a JSON value a few levels deep$/,
  ],
  [
    "one object shared by both fields of its parent, 40 levels deep",
    sharedBothWays(40),
    /^S\.anyOf\[[.a-zA-Z01[\]]*\.\.\. is past the 200,000th value of a JSON value/,
  ],
];

function revokedProxy(): object {
  const r = Proxy.revocable({}, {});
  r.revoke();
  return r.proxy;
}

const SCHEMA_TAKERS: [string, (schema: unknown) => unknown][] = [
  ["normaliseSchema", (schema) => normaliseSchema(schema)],
  ["selfContained", (schema) => selfContained(schema as never, pkg)],
  ["schemaToType", (schema) => schemaToType(schema as never)],
];

describe("taquba/codegen schema arguments that are not JSON deeper down", () => {
  for (const [fn, call] of SCHEMA_TAKERS) {
    it.each(HOSTILE_SCHEMAS)(`${fn}: %s is a ValidationError naming its path, at once`, (_name, schema, message) => {
      const started = process.cpuUsage();
      let caught: unknown;
      try {
        call(schema);
      } catch (err) {
        caught = err;
      }
      const used = process.cpuUsage(started);
      expect(caught).toBeInstanceOf(ValidationError);
      // Refused at the top, not a failure from inside wrapped with its cause.
      expect((caught as Error).cause).toBeUndefined();
      expect((caught as Error).message.replace(`${fn}'s schema`, "S")).toMatch(message);
      expect((used.user + used.system) / 1000).toBeLessThan(1000);
    });
  }

  it("a schema sharing one object among its fields, JSON-shaped, gives what its written-out copy gives", () => {
    const str = { type: "string", minLength: 1 };
    const shared = { type: "object", properties: { a: str, b: str }, required: ["a"] };
    const copy = JSON.parse(JSON.stringify(shared)) as typeof shared;
    expect(normaliseSchema(shared)).toEqual(normaliseSchema(copy));
    expect(schemaToType(shared as never)).toBe(schemaToType(copy as never));
    expect(selfContained(shared as never, pkg)).toEqual(selfContained(copy as never, pkg));
  });

  it("a getter in a schema is read once: what was checked is what is used", () => {
    let reads = 0;
    const schema = Object.defineProperty({ type: "object" }, "properties", {
      enumerable: true,
      get() {
        reads++;
        return reads === 1 ? { a: { type: "string" } } : { a: () => {} };
      },
    });
    expect(schemaToType(schema as never)).toContain("a?: string");
    expect(reads).toBe(1);
  });
});

describe("taquba/codegen refusals say what was wrong", () => {
  it("a string where the spec inputs belong is refused at once, never spread into its characters", () => {
    const started = process.cpuUsage();
    expect(() => analyse(huge as never)).toThrow(/^analyse's inputs must be an array of spec inputs \(\{ file, source \}\), got "x{64}\.\.\." \(a string\)$/);
    expect(() => generate(huge as never)).toThrow(ValidationError);
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(1000);
  });

  it("a 10 MB spec text is a SPEC_TOO_LARGE diagnostic on its file, and nothing is generated", () => {
    const r = generate([{ file: "big.taquba.yaml", source: huge }]);
    expect(r.files).toEqual([]);
    expect(r.diagnostics.map((d) => [d.code, d.file])).toEqual([["SPEC_TOO_LARGE", "big.taquba.yaml"]]);
    expect(r.diagnostics[0]?.message).toContain("split it into several spec files");
  });

  it("an entry with a hole or without a file is named by its index", () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point.
    expect(() => generate([{ file: specFile, source: specText }, , { file: specFile, source: specText }] as never)).toThrow(
      "generate's inputs[1] must be spec inputs ({ file, source }), got undefined",
    );
    expect(() => analyse([{ source: specText }] as never)).toThrow("analyse's inputs[0].file must be a file path");
    expect(() => loadSpec("a\uD800.taquba.yaml", specText)).toThrow("loadSpec's file must be a file path");
  });

  it("values JSON cannot hold are refused rather than hashed as null", () => {
    expect(() => contractHash({ a: Number.POSITIVE_INFINITY } as never)).toThrow("contractHash's contract.a must be a JSON value, got Infinity");
    expect(() => canonicalJson(undefined)).toThrow("canonicalJson's value must be a JSON value, got undefined");
    expect(() => canonicalJson([1n])).toThrow("canonicalJson's value[0] must be a JSON value, got 1n (a bigint)");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow("canonicalJson's value.self refers to an object that contains it (a cycle); a JSON value cannot");
    expect(() => contractHash({ at: new Date(0) } as never)).toThrow(
      "contractHash's contract.at must be a JSON value (a plain object, an array or a scalar), got an instance of Date",
    );
    expect(canonicalJson({ b: 1, a: [true, null] })).toBe('{"a":[true,null],"b":1}');
  });

  it("a hand-made model missing a field is a ValidationError naming the function, with the original as its cause", () => {
    let caught: unknown;
    try {
      emitPackage({ name: "shop" } as never);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    expect((caught as Error).message).toMatch(/^emitPackage failed on what it was given \(.+\); pass what loadSpec, analyse or generate built/);
    expect((caught as Error).cause).toBeInstanceOf(TypeError);
  });

  it("main refuses an io without out and err, and answers --help as before", async () => {
    await expect(main(["--help"], { cwd: process.cwd() } as never)).rejects.toThrow("main's io must be an object with out and err methods, got an object");
    const lines: string[] = [];
    await expect(main(["--help"], { cwd: process.cwd(), out: (t) => lines.push(t), err: (t) => lines.push(t) })).resolves.toBe(0);
    expect(lines.join("\n")).toContain("codegen");
  });

  it("valid arguments give the same files as the stage itself", () => {
    const inputs = [{ file: specFile, source: specText }];
    expect(generate(inputs)).toEqual(generateStage(inputs));
  });
});
