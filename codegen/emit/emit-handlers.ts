/**
 * @module Emits `handlers.ts`: one handler interface per job and the
 * `register` function whose `handlers` argument must name every job.
 */

import type { StatementStructures } from "ts-morph";
import { headersType, jobNames, RUNTIME_MODULE } from "./generated-names.js";
import { docText, propertyKey } from "./names.js";
import type { PackageModel } from "../analyse/spec-model.js";
import { Imports, loadTsMorph, printFile } from "../print/ts-file.js";

/** The text of `handlers.ts`. */
export function emitHandlers(pkg: PackageModel, source: string): string {
  const { StructureKind } = loadTsMorph();
  const imports = new Imports().value(RUNTIME_MODULE, "validatingHandler").type(RUNTIME_MODULE, "JobContext", "JobRegistrar");
  const hType = headersType(pkg);
  const typeNames = [hType];
  const defs: string[] = [];
  const statements: StatementStructures[] = [];

  for (const j of pkg.jobs) {
    const n = jobNames(j);
    typeNames.push(n.input, n.output);
    if (j.error !== undefined) typeNames.push(n.error);
    defs.push(n.definition);
    statements.push({
      kind: StructureKind.TypeAlias,
      name: n.context,
      isExported: true,
      docs: [`What the handler of job "${j.name}" receives beside its input.`],
      type: `JobContext<${hType}, ${n.error}>`,
    });
    statements.push({
      kind: StructureKind.Interface,
      name: n.handler,
      isExported: true,
      docs: [
        `Implements job "${j.qualifiedName}"${j.description === undefined ? "." : `: ${docText(j.description)}`}\n\n` +
          `The input is validated before \`run\` is called and the output before it is stored` +
          (j.error === undefined ? "." : `; \`ctx.fail(error)\` ends the job with a validated typed error.`),
      ],
      methods: [
        {
          name: "run",
          parameters: [
            { name: "input", type: n.input },
            { name: "ctx", type: n.context },
          ],
          returnType: `Promise<${n.output}>`,
        },
      ],
    });
  }

  statements.push({
    kind: StructureKind.Interface,
    name: "Handlers",
    isExported: true,
    docs: [`One handler per job of package "${pkg.name}"; leaving one out is a compile error.`],
    properties: pkg.jobs.map((j) => ({ name: propertyKey(j.ident), isReadonly: true, type: jobNames(j).handler })),
  });

  const lines = pkg.jobs.map((j) => {
    const n = jobNames(j);
    return `builder.register(${n.definition}, validatingHandler(${n.definition}, handlers.${j.ident}));`;
  });
  statements.push({
    kind: StructureKind.Function,
    name: "register",
    isExported: true,
    typeParameters: [{ name: "B", constraint: "JobRegistrar" }],
    parameters: [
      { name: "builder", type: "B" },
      { name: "handlers", type: "Handlers" },
    ],
    returnType: "B",
    docs: [
      `Registers a handler for every job of package "${pkg.name}" on a builder (\`JobRunner.builder(queue, store)\`\n` +
        `or \`WorkflowDispatcher.builder()\`), which may hold the jobs and workflows of other packages too: one\n` +
        `runtime runs them all. Each handler is wrapped so its input, output and typed error are validated on the\nworker side. Returns the builder.`,
    ],
    statements: [...lines, "return builder;"].join("\n"),
  });

  if (defs.length > 0) imports.value("./definitions.js", ...defs);
  imports.type("./types.js", ...typeNames);
  return printFile(source, imports, statements);
}
