#!/usr/bin/env node
// The `taquba` executable. Runs the compiled CLI when the package is built,
// and the TypeScript source through tsx when working in the repository.
import { existsSync } from "node:fs";

const built = new URL("../dist/codegen/cli.js", import.meta.url);
const mod = existsSync(built)
  ? await import(built.href)
  : await (async () => {
      const { register } = await import("tsx/esm/api");
      register();
      return import(new URL("./cli.ts", import.meta.url).href);
    })();
process.exitCode = await mod.main(process.argv.slice(2));
