#!/usr/bin/env node
// The `taquba` executable. In a checkout it runs the TypeScript sources
// through tsx, so edits take effect without a build; an installed package
// (no sources beside this file) runs the compiled CLI from dist/.
import { existsSync } from "node:fs";

const source = new URL("./cli.ts", import.meta.url);
const mod = existsSync(source)
  ? await (async () => {
      const { register } = await import("tsx/esm/api");
      register();
      return import(source.href);
    })()
  : await import(new URL("../dist/codegen/cli.js", import.meta.url).href);
process.exitCode = await mod.main(process.argv.slice(2));
