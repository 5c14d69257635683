/**
 * @module The entry a TypeScript child script starts from: the script and
 * everything it imports from the repository, bundled into one JavaScript
 * file (packages stay imports), so a child starts with plain Node instead
 * of `--import tsx`, whose loader hooks resolve and load each of the
 * runtime's modules again in every child (several times the CPU of the
 * whole start). The bundle is kept under .tmp/ and made again whenever a
 * file it was made from changed, so every process and run shares it.
 *
 * A script whose modules read `import.meta` (a URL relative to their own
 * file) runs through tsx as before: in one bundle such a URL would point
 * at the bundle.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Inside the repository, so the bundle's package imports resolve from its node_modules. */
const DIR = join(ROOT, ".tmp", "child-entries");

/** How a bundle is made: part of its name, so a bundle made otherwise is not taken for it. */
const BUILD = {
  bundle: true,
  platform: "node",
  format: "esm",
  packages: "external",
  // Class and function names as in the sources: errors are told apart by them.
  keepNames: true,
  // Stacks name the sources' files and lines, as under tsx (tests and their failure messages read them).
  sourcemap: "linked",
} as const;

/** What a bundle was made from: its inputs, each with the size and time it had. */
interface Made {
  readonly inputs: readonly string[];
  readonly stamp: string;
  readonly viaTsx: boolean;
}

/** The entries this process settled on, by script. */
const settled = new Map<string, readonly string[]>();

/** Size and modification time of each input: a changed file changes the stamp. */
function stampOf(inputs: readonly string[]): string | undefined {
  const h = createHash("sha256");
  for (const input of inputs) {
    try {
      const s = statSync(input);
      h.update(`${input}\0${s.size}\0${s.mtimeMs}\n`);
    } catch {
      return undefined;
    }
  }
  return h.digest("hex");
}

function readMade(path: string): Made | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as Made;
  } catch {
    return undefined;
  }
}

/** Written under a name of its own, then renamed: a process reading it meanwhile sees the old file or the new one whole. */
function writeWhole(path: string, text: string): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, path);
}

/**
 * The Node arguments that start `script` (an absolute path, or one relative
 * to `cwd`, the child's working directory): `["--enable-source-maps", bundle]`, or
 * `["--import", "tsx", script]` for a script that reads `import.meta` (see
 * the module comment).
 */
export function childEntry(script: string, cwd: string = process.cwd()): readonly string[] {
  const abs = isAbsolute(script) ? script : join(cwd, script);
  const known = settled.get(abs);
  if (known !== undefined) return known;
  const name = createHash("sha256")
    .update(`${abs}\0${JSON.stringify(BUILD)}`)
    .digest("hex")
    .slice(0, 16);
  const bundle = join(DIR, `${name}.mjs`);
  const madePath = join(DIR, `${name}.json`);
  const made = readMade(madePath);
  let viaTsx: boolean;
  if (made !== undefined && (made.viaTsx || existsSync(bundle)) && made.stamp === stampOf(made.inputs)) {
    viaTsx = made.viaTsx;
  } else {
    mkdirSync(DIR, { recursive: true });
    const out = buildSync({ ...BUILD, entryPoints: [abs], absWorkingDir: ROOT, outfile: bundle, write: false, metafile: true, logLevel: "silent" });
    const inputs = Object.keys(out.metafile.inputs).map((i) => join(ROOT, i));
    viaTsx = inputs.some((i) => relative(ROOT, i).split("/")[0] !== "node_modules" && readFileSync(i, "utf8").includes("import.meta"));
    if (!viaTsx) {
      const map = out.outputFiles.find((f) => f.path.endsWith(".map"))!;
      writeWhole(`${bundle}.map`, map.text);
      writeWhole(bundle, out.outputFiles.find((f) => f !== map)!.text);
    }
    writeWhole(madePath, JSON.stringify({ inputs, stamp: stampOf(inputs) ?? "", viaTsx } satisfies Made));
  }
  const args = viaTsx ? ["--import", "tsx", script] : ["--enable-source-maps", bundle];
  settled.set(abs, args);
  return args;
}
