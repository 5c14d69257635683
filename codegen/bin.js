#!/usr/bin/env node
// The `taquba` executable. In a checkout it runs the TypeScript sources
// through tsx, so edits take effect without a build; an installed package
// (no sources beside this file) runs the compiled CLI from dist/.
import { existsSync } from "node:fs";

// The generator's libraries are optional peer dependencies, so that an
// application using only the runtime does not install them.
const GENERATOR_DEPS = ["@eslint-community/regexpp", "ajv", "diff", "ts-morph", "yaml"];

async function load() {
  const source = new URL("./cli/cli.ts", import.meta.url);
  if (existsSync(source)) {
    // A cached bundle of the sources starts faster than tsx; it is rebuilt whenever a source changes.
    const { importBundled } = await import("./cli/source-bundle.js");
    const bundled = await importBundled(source.href);
    if (bundled !== undefined) return bundled;
    const { register } = await import("tsx/esm/api");
    register();
    return import(source.href);
  }
  return import(new URL("../dist/codegen/cli/cli.js", import.meta.url).href);
}

try {
  const mod = await load();
  process.exitCode = await mod.main(process.argv.slice(2));
} catch (e) {
  const missing = e && e.code === "ERR_MODULE_NOT_FOUND" && GENERATOR_DEPS.find((d) => String(e.message).includes(`'${d}'`));
  if (!missing) throw e;
  console.error(
    `taquba codegen needs the package "${missing}", which is not installed.\nInstall the generator's dependencies as dev dependencies: npm install --save-dev ${GENERATOR_DEPS.join(" ")}`,
  );
  process.exitCode = 1;
}
