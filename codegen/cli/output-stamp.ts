/**
 * @module The output stamp: what lets `--check` skip regeneration safely.
 *
 * After writing, the CLI records in `<out>/taquba-stamp.json` a key over
 * the generator (its own code, the spec meta-schema and the versions of the
 * libraries that shape output) and the spec texts, plus a hash of every
 * generated file and lock. The generator is deterministic, so when the key
 * matches and every file on disk still has its recorded hash, regenerating
 * would produce the same bytes; `--check` then answers without loading the
 * compiler stack. Any mismatch (an edited spec, an edited or deleted or
 * extra generated file, a new generator) falls back to full regeneration.
 */

import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { SpecInput } from "../generate.js";
import { compareCodeUnits } from "../emit/names.js";
import { parseSpecHeader } from "../print/ts-file.js";

export const STAMP_FILE = "taquba-stamp.json";

/** The stamp as stored. */
export interface OutputStamp {
  readonly stampVersion: 1;
  /** Generator fingerprint and spec texts, hashed together. */
  readonly key: string;
  /** Generated file (relative to the output folder) -> content hash. */
  readonly files: { readonly [path: string]: string };
  /** Lock file (as the spec's path) -> content hash. */
  readonly locks: { readonly [path: string]: string };
  /**
   * Spec file -> the hash of its text and the package folder generated from
   * it, so `--check` can say in one line which spec changed since the code
   * was generated. Absent in stamps of older versions.
   */
  readonly specs?: RecordedSpecs;
}

/** Spec file -> the hash of the text a package was generated from, and that package's folder. */
export type RecordedSpecs = { readonly [path: string]: { readonly sha256: string; readonly package: string } };

/**
 * The specs the generated files say they were generated from (each
 * package's files carry the spec path and hash in their first line). A
 * package whose files disagree (one edited by hand, a half-finished copy)
 * records no single hash: it counts as changed. Undefined when no file
 * carries a hash (output of an older version), and the stamp decides.
 */
export function specsFromHeaders(onDisk: ReadonlyMap<string, string>): RecordedSpecs | undefined {
  const found = new Map<string, { sha256: string; package: string }>();
  for (const [path, content] of [...onDisk].sort(([a], [b]) => compareCodeUnits(a, b))) {
    const header = parseSpecHeader(content);
    if (header === undefined) continue;
    const pkg = path.split("/")[0]!;
    const before = found.get(header.file);
    if (before === undefined) found.set(header.file, { sha256: header.sha256, package: pkg });
    else if (before.sha256 !== header.sha256) before.sha256 = "mixed";
  }
  return found.size === 0 ? undefined : Object.fromEntries(found);
}

/**
 * One line per spec edited, added or removed since the output was
 * generated, judged by `recorded` (from the files' headers, else the
 * stamp); empty when none, or when nothing was recorded.
 */
export function staleSpecs(recorded: RecordedSpecs | undefined, inputs: readonly SpecInput[], outName: string): string[] {
  if (recorded === undefined) return [];
  // Paths are relative to where codegen ran; from elsewhere none matches, and full regeneration decides.
  if (!inputs.some((i) => recorded[i.file] !== undefined)) return [];
  const fix = "run npx taquba codegen";
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const i of [...inputs].sort((a, b) => compareCodeUnits(a.file, b.file))) {
    seen.add(i.file);
    const before = recorded[i.file];
    if (before === undefined) lines.push(`${i.file} is new since ${outName} was generated: ${fix}`);
    else if (before.sha256 !== sha256(i.source)) lines.push(`${i.file} changed since ${outName}/${before.package} was generated: ${fix}`);
  }
  for (const file of Object.keys(recorded).sort(compareCodeUnits)) {
    if (!seen.has(file)) lines.push(`${file} was removed since ${outName}/${recorded[file]!.package} was generated: ${fix}`);
  }
  return lines;
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

let fingerprint: Promise<string> | undefined;

/** A hash of everything besides the specs that determines the output bytes. */
export function generatorFingerprint(): Promise<string> {
  fingerprint ??= (async () => {
    const here = dirname(fileURLToPath(import.meta.url));
    const codegenDir = dirname(here);
    const hash = createHash("sha256");
    // The generator's own modules in every stage folder (sources in a checkout, compiled files when installed).
    const own = (await readdir(codegenDir, { recursive: true }))
      .filter((f) => /\.(ts|js)$/.test(f))
      .map((f) => f.split(sep).join("/"))
      .sort(compareCodeUnits);
    for (const f of own) hash.update(f).update(await readFile(join(codegenDir, f)));
    for (const rel of [
      "../../schemas/taquba-spec.schema.json",
      "../../../schemas/taquba-spec.schema.json",
      "../../runtime/contract/json-schema-formats.ts",
      "../../runtime/contract/json-schema-formats.js",
      // The runtime's key-template parser decides which templates the checks accept.
      "../../runtime/contract/key-template.ts",
      "../../runtime/contract/key-template.js",
    ]) {
      const content = await readFile(join(here, rel)).catch(() => undefined);
      if (content !== undefined) hash.update(rel).update(content);
    }
    const require = createRequire(import.meta.url);
    for (const pkg of ["ajv", "ts-morph", "yaml"]) {
      let version = "unknown";
      try {
        version = String((require(`${pkg}/package.json`) as { version?: unknown }).version);
      } catch {
        // Without a version the fingerprint still covers the generator's code.
      }
      hash.update(`${pkg}@${version}`);
    }
    return hash.digest("hex");
  })();
  return fingerprint;
}

/** The stamp key for a set of spec inputs. */
export async function stampKey(inputs: readonly SpecInput[]): Promise<string> {
  const hash = createHash("sha256").update(await generatorFingerprint());
  for (const i of [...inputs].sort((a, b) => compareCodeUnits(a.file, b.file))) hash.update(`\0${i.file}\0${i.source}`);
  return hash.digest("hex");
}

/** Renders a stamp as stored text. */
export function renderStamp(stamp: OutputStamp): string {
  return `${JSON.stringify(stamp, null, 2)}\n`;
}

/** Parses stored stamp text; undefined when unusable. */
export function parseStamp(text: string | undefined): OutputStamp | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as Partial<OutputStamp>;
    return v.stampVersion === 1 && typeof v.key === "string" && typeof v.files === "object" && typeof v.locks === "object" ? (v as OutputStamp) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the output on disk is exactly what the stamp records. */
export function stampMatches(stamp: OutputStamp, key: string, onDisk: ReadonlyMap<string, string>, locks: ReadonlyMap<string, string | undefined>): boolean {
  if (stamp.key !== key) return false;
  const recorded = Object.keys(stamp.files);
  if (recorded.length !== onDisk.size) return false;
  for (const path of recorded) {
    const content = onDisk.get(path);
    if (content === undefined || sha256(content) !== stamp.files[path]) return false;
  }
  const lockPaths = Object.keys(stamp.locks);
  if (lockPaths.length !== locks.size) return false;
  return lockPaths.every((p) => {
    const content = locks.get(p);
    return content !== undefined && sha256(content) === stamp.locks[p];
  });
}
