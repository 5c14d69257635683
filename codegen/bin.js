#!/usr/bin/env node
// The `taquba` executable. `taquba codegen` and `taquba init` run the code
// generator; every other command is an operator command (runs, jobs, queue,
// dashboard...), which loads none of the generator's libraries. In a
// checkout it runs the TypeScript sources (from a cached bundle, else
// through tsx), so edits take effect without a build; an installed package
// (no sources beside this file) runs the compiled CLIs from dist/.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// The generator's libraries are optional peer dependencies, so that an
// application using only the runtime does not install them.
const GENERATOR_DEPS = ["@eslint-community/regexpp", "ajv", "diff", "ts-morph", "yaml"];
const GENERATOR_COMMANDS = new Set(["codegen", "init"]);

/** Loads a CLI entry: `source` (relative to the checkout's root) or its compiled twin under dist/. */
async function load(source, cacheName) {
  const root = new URL("../", import.meta.url);
  const sourceUrl = new URL(source, root);
  if (existsSync(sourceUrl)) {
    // A cached bundle of the sources starts faster than tsx; it is rebuilt whenever a source changes.
    const { importBundled } = await import("./cli/source-bundle.js");
    const cacheDir = cacheName === undefined ? undefined : fileURLToPath(new URL(`node_modules/.cache/${cacheName}/`, root));
    const bundled = await importBundled(sourceUrl.href, cacheDir);
    if (bundled !== undefined) return bundled;
    const { register } = await import("tsx/esm/api");
    register();
    return import(sourceUrl.href);
  }
  return import(new URL(`dist/${source.replace(/\.ts$/, ".js")}`, root).href);
}

const argv = process.argv.slice(2);
if (GENERATOR_COMMANDS.has(argv[0])) {
  try {
    const mod = await load("codegen/cli/cli.ts");
    process.exitCode = await mod.main(argv);
  } catch (e) {
    const missing = e && e.code === "ERR_MODULE_NOT_FOUND" && GENERATOR_DEPS.find((d) => String(e.message).includes(`'${d}'`));
    if (!missing) throw e;
    console.error(
      `taquba codegen needs the package "${missing}", which is not installed.\nInstall the generator's dependencies as dev dependencies: npm install --save-dev ${GENERATOR_DEPS.join(" ")}`,
    );
    process.exitCode = 1;
  }
} else {
  const mod = await load("operator/cli/main.ts", "taquba-operator");
  process.exitCode = await mod.main(argv);
}
