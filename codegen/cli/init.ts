/**
 * @module `taquba init [dir]`: starts a project that runs taquba.
 *
 * Writes the files of `init-templates` (a commented example spec, handlers,
 * a worker and a submit script over a local directory, a tsconfig), adds
 * npm scripts to package.json (creating it when absent), then generates
 * the typed code. Refuses, before writing anything, when one of its files
 * exists already; package.json is merged, never overwritten.
 */
import { access, mkdir, readFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { CliIo } from "./cli.js";
import { writeAtomic } from "./output-files.js";
import { INIT_PACKAGE, INIT_SCRIPTS, initFiles } from "./init-templates.js";

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** The package.json text after adding the init scripts, and the names of scripts kept as they were. */
export function mergePackageJson(existing: string | undefined, projectName: string): { text: string; kept: string[] } {
  const pkg = (existing === undefined ? { name: projectName, private: true, type: "module" } : JSON.parse(existing)) as Record<string, unknown>;
  if (typeof pkg !== "object" || pkg === null || Array.isArray(pkg)) throw new Error("package.json does not hold a JSON object");
  const scripts = (typeof pkg["scripts"] === "object" && pkg["scripts"] !== null ? pkg["scripts"] : {}) as Record<string, string>;
  const kept: string[] = [];
  for (const [name, command] of Object.entries(INIT_SCRIPTS)) {
    if (scripts[name] === undefined) scripts[name] = command;
    else if (scripts[name] !== command) kept.push(name);
  }
  pkg["scripts"] = scripts;
  return { text: `${JSON.stringify(pkg, null, 2)}\n`, kept };
}

/** Runs `taquba init [dir]`; `codegen` generates the code of the new spec (the CLI's own codegen command). Resolves to the exit code. */
export async function runInit(args: readonly string[], io: CliIo, codegen: (argv: string[], io: CliIo) => Promise<number>): Promise<number> {
  if (args.length > 1 || args.some((a) => a.startsWith("-"))) {
    io.err("usage: taquba init [dir]   (dir defaults to the current folder)");
    return 2;
  }
  const dir = args[0] === undefined ? io.cwd : isAbsolute(args[0]) ? args[0] : resolve(io.cwd, args[0]);
  const shown = (p: string) => relative(io.cwd, join(dir, p)) || p;
  const files = initFiles();
  const taken = [];
  for (const f of files) if (await exists(join(dir, f.path))) taken.push(shown(f.path));
  if (taken.length > 0) {
    io.err(`taquba init writes nothing over existing files, and these exist: ${taken.join(", ")}; move them away or run init in another folder`);
    return 1;
  }
  const pkgPath = join(dir, "package.json");
  let merged;
  try {
    merged = mergePackageJson(
      await readFile(pkgPath, "utf8").catch(() => undefined),
      basename(dir)
        .toLowerCase()
        .replace(/[^a-z0-9-]/g, "-") || "app",
    );
  } catch (e) {
    io.err(`cannot read ${shown("package.json")}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  for (const f of files) {
    await mkdir(dirname(join(dir, f.path)), { recursive: true });
    await writeAtomic(join(dir, f.path), f.content);
    io.out(`created ${shown(f.path)}`);
  }
  await writeAtomic(pkgPath, merged.text);
  io.out(`updated ${shown("package.json")} (scripts: ${Object.keys(INIT_SCRIPTS).join(", ")})`);
  for (const name of merged.kept) io.err(`kept your npm script "${name}"; taquba's would be: ${INIT_SCRIPTS[name]}`);
  const code = await codegen(["codegen", join(dir, "schemas"), "--out", join(dir, "generated")], { ...io, cwd: dir });
  if (code !== 0) {
    io.err("the project files are written, but generating the code failed (see above); fix that and run `npx taquba codegen`");
    return code;
  }
  io.out(
    [
      "",
      `next: edit schemas/${INIT_PACKAGE}.taquba.yaml and src/handlers.ts, then`,
      "  npm run codegen   # after each spec edit",
      "  npm run submit    # submits a job and a workflow run",
      "  npm run worker    # runs them; Ctrl-C stops it",
    ].join("\n"),
  );
  return 0;
}
