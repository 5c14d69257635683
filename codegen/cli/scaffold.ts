/**
 * @module Handler stubs for `--scaffold` (pure): one module per job and per
 * workflow (`<name>.workflow.ts`, one method per step), implementing its
 * generated handler interface.
 *
 * A stub throws a `PermanentError` naming what to write, so a job or step
 * run before it is written fails at once instead of being retried.
 *
 * The CLI writes a stub only where no file exists, so rerunning it as the
 * spec grows adds stubs for new jobs and never touches edited ones.
 */

import { posix } from "node:path";
import type { GeneratedFile } from "../generate.js";
import { jobNames, stepNames, workflowNames } from "../emit/generated-names.js";
import { docText, kebabCase } from "../emit/names.js";
import type { PackageModel } from "../analyse/spec-model.js";

/**
 * The stub files for every job and workflow, with paths relative to the scaffold folder
 * (`<package>/<job>.ts`). `importPath` is the generated package's index as
 * seen from the scaffold folder, e.g. `../generated` (no trailing slash).
 */
export function scaffoldFiles(packages: readonly PackageModel[], importPath: string): GeneratedFile[] {
  const files: GeneratedFile[] = [];
  for (const pkg of packages) {
    // Stubs sit one folder below the scaffold folder (`<package>/`).
    const from = posix.join("..", importPath, pkg.name, "index.js");
    const specifier = from.startsWith(".") ? from : `./${from}`;
    const header = (what: string) => [
      `/**`,
      ` * @module Handler of ${docText(what)}.`,
      ` *`,
      ` * Written once by \`taquba codegen --scaffold\`; yours to edit, never overwritten.`,
      ` */`,
      ``,
      `import { PermanentError } from "taquba";`,
      `import { ${pkg.ident} } from ${JSON.stringify(specifier)};`,
      ``,
    ];
    for (const job of pkg.jobs) {
      const n = jobNames(job);
      const content = [
        ...header(`job "${job.name}" of package "${pkg.name}" (spec: ${pkg.file}, jobs.${job.name})`),
        `export class ${job.typeName}Handler implements ${pkg.ident}.${n.handler} {`,
        `  async run(input: ${pkg.ident}.${n.input}, ctx: ${pkg.ident}.${n.context}): Promise<${pkg.ident}.${n.output}> {`,
        `    void input;`,
        `    void ctx;`,
        `    throw new PermanentError(${JSON.stringify(`the handler of job "${job.name}" (package "${pkg.name}") is not implemented yet: write ${job.typeName}Handler.run in ${pkg.name}/${kebabCase(job.name)}.ts`)});`,
        `  }`,
        `}`,
        ``,
      ].join("\n");
      files.push({ path: `${pkg.name}/${kebabCase(job.name)}.ts`, content });
    }
    for (const w of pkg.workflows) {
      const n = workflowNames(w);
      const methods = w.steps.flatMap((st, i) => {
        const sn = stepNames(w, st);
        const type = (t: string) => (t === "null" ? t : `${pkg.ident}.${t}`);
        return [
          ...(i === 0 ? [] : [``]),
          `  // Step "${st.name}"${st.next.length === 0 ? ": ends the run." : `: continues to ${st.next.join(", ")} (ctx.next), or ends the run.`}`,
          `  async ${st.ident}(payload: ${type(sn.payload)}, ctx: ${pkg.ident}.${sn.context}): Promise<${pkg.ident}.${sn.transition}> {`,
          `    void payload;`,
          `    void ctx;`,
          `    throw new PermanentError(${JSON.stringify(`step "${st.name}" of workflow "${w.name}" (package "${pkg.name}") is not implemented yet: write ${n.handler}.${st.ident} in ${pkg.name}/${kebabCase(w.name)}.workflow.ts`)});`,
          `  }`,
        ];
      });
      const content = [
        ...header(`workflow "${w.name}" of package "${pkg.name}" (spec: ${pkg.file}, workflows.${w.name})`),
        `export class ${n.handler} implements ${pkg.ident}.${n.handler} {`,
        ...methods,
        `}`,
        ``,
      ].join("\n");
      files.push({ path: `${pkg.name}/${kebabCase(w.name)}.workflow.ts`, content });
    }
  }
  return files;
}
