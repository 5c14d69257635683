/**
 * @module Handler stubs for `--scaffold` (pure): one module per job,
 * implementing its generated handler interface.
 *
 * The CLI writes a stub only where no file exists, so rerunning it as the
 * spec grows adds stubs for new jobs and never touches edited ones.
 */

import { posix } from "node:path";
import type { GeneratedFile } from "./generate.js";
import { jobNames } from "./generated-names.js";
import { kebabCase } from "./names.js";
import type { PackageModel } from "./spec-model.js";

/**
 * The stub files for every job, with paths relative to the scaffold folder
 * (`<package>/<job>.ts`). `importPath` is the generated package's index as
 * seen from the scaffold folder, e.g. `../generated` (no trailing slash).
 */
export function scaffoldFiles(packages: readonly PackageModel[], importPath: string): GeneratedFile[] {
  const files: GeneratedFile[] = [];
  for (const pkg of packages) {
    for (const job of pkg.jobs) {
      const n = jobNames(job);
      const from = posix.join("..", importPath, pkg.name, "index.js");
      const specifier = from.startsWith(".") ? from : `./${from}`;
      const content = [
        `/**`,
        ` * @module Handler of job "${job.qualifiedName}" (spec: ${pkg.file}, jobs.${job.name}).`,
        ` *`,
        ` * Written once by \`taquba codegen --scaffold\`; yours to edit, never overwritten.`,
        ` */`,
        ``,
        `import { ${pkg.ident} } from "${specifier}";`,
        ``,
        `export class ${job.typeName}Handler implements ${pkg.ident}.${n.handler} {`,
        `  async run(input: ${pkg.ident}.${n.input}, ctx: ${pkg.ident}.${n.context}): Promise<${pkg.ident}.${n.output}> {`,
        `    void input;`,
        `    void ctx;`,
        `    throw new Error("job ${job.qualifiedName} is not implemented yet; write its handler in this file");`,
        `  }`,
        `}`,
        ``,
      ].join("\n");
      files.push({ path: `${pkg.name}/${kebabCase(job.name)}.ts`, content });
    }
  }
  return files;
}
