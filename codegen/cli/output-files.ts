/**
 * @module Disk access for the CLI: finding spec files, reading generated
 * output, and writing it atomically. IO lives only in `cli/` (this module,
 * the CLI itself, the output stamp); every other stage is pure.
 */

import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import type { GeneratedFile, SpecInput } from "../generate.js";
import { compareCodeUnits } from "../emit/names.js";
import { GENERATED_MARKER } from "../print/ts-file.js";

/** Spec files are named `*.taquba.yaml` (or `.yml`) so a folder may hold other YAML. */
export const SPEC_FILE = /\.taquba\.ya?ml$/;

/**
 * A path as shown to users and written into headers, `/`-separated: relative
 * to `cwd` when it lies inside `cwd` (`.` for `cwd` itself), absolute
 * otherwise, so the name reads the same from anywhere (`../../x` would not).
 */
export function displayPath(path: string, cwd: string): string {
  const full = resolve(cwd, path);
  const rel = relative(cwd, full);
  if (rel === "") return ".";
  const inside = rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
  return (inside ? rel : full).split(sep).join("/");
}

async function walk(dir: string, keep: (name: string) => boolean): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return out;
    throw e;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p, keep)));
    else if (e.isFile() && keep(e.name)) out.push(p);
  }
  return out.sort(compareCodeUnits);
}

/** The spec files named by `paths`: files as given, folders searched recursively for `*.taquba.yaml`. */
export async function findSpecFiles(paths: readonly string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const p of paths) {
    const s = await stat(p);
    if (s.isDirectory()) for (const f of await walk(p, (n) => SPEC_FILE.test(n))) out.add(f);
    else out.add(p);
  }
  return [...out].sort(compareCodeUnits);
}

/** Reads spec files as generator inputs, each named by its {@link displayPath} from `cwd`. */
export async function readSpecs(files: readonly string[], cwd: string): Promise<SpecInput[]> {
  return Promise.all(files.map(async (f) => ({ file: displayPath(f, cwd), source: await readFile(resolve(cwd, f), "utf8") })));
}

/** Every file under `outDir` that carries the generated-file header, by relative path. */
export async function readGenerated(outDir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const f of await walk(outDir, (n) => n.endsWith(".ts"))) {
    const content = await readFile(f, "utf8");
    if (content.slice(0, 200).includes(GENERATED_MARKER)) out.set(relative(outDir, f).split(sep).join("/"), content);
  }
  return out;
}

/** Writes a file through a temporary sibling and a rename, so readers never see half a file. */
export async function writeAtomic(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(tmp, content);
  await rename(tmp, path);
}

/** Brings `outDir` to exactly `files`: writes changed and new files, deletes stale generated ones. */
export async function syncOutput(
  outDir: string,
  files: readonly GeneratedFile[],
  onDisk: ReadonlyMap<string, string>,
): Promise<{ written: string[]; deleted: string[] }> {
  const written: string[] = [];
  for (const f of files) {
    if (onDisk.get(f.path) === f.content) continue;
    await writeAtomic(join(outDir, f.path), f.content);
    written.push(f.path);
  }
  const produced = new Set(files.map((f) => f.path));
  const deleted = [...onDisk.keys()].filter((p) => !produced.has(p)).sort(compareCodeUnits);
  for (const p of deleted) await rm(join(outDir, p), { force: true });
  return { written, deleted };
}
