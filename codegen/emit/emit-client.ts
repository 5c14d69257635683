/**
 * @module Emits `client.ts`: the typed client of a package.
 *
 * `client(target)` returns a submit function per job and, when the target
 * can send signals, a sender per signal. Which half exists is decided by the
 * target's type, so calling `.signals` on a job runner that cannot send them
 * is a compile error. Every method validates before anything is enqueued.
 */

import type { StatementStructures } from "ts-morph";
import { headersType, jobNames, signalNames, workflowNames, RUNTIME_MODULE } from "./generated-names.js";
import { docText, jsDoc, propertyKey } from "./names.js";
import type { PackageModel } from "../analyse/spec-model.js";
import { Imports, loadTsMorph, printFile } from "../print/ts-file.js";

/** The text of `client.ts`. */
export function emitClient(pkg: PackageModel, source: string): string {
  const { StructureKind } = loadTsMorph();
  const imports = new Imports();
  const hType = headersType(pkg);
  const hasRequired = pkg.headers.some((h) => h.required);
  const statements: Array<string | StatementStructures> = [];
  const typeNames: string[] = [];
  const defs: string[] = [];
  const hasJobs = pkg.jobs.length > 0;
  const hasSignals = pkg.signals.length > 0;
  const hasWorkflows = pkg.workflows.length > 0;

  if (hasJobs) {
    typeNames.push(hType);
    defs.push("headers");
    imports.value(RUNTIME_MODULE, "requireSubmitter").type(RUNTIME_MODULE, "JobHandle", "JobSubmitOptions", "JobSubmitter");
    statements.push({
      kind: StructureKind.TypeAlias,
      name: "SubmitOptions",
      isExported: true,
      docs: [hasRequired ? `Options of a submission. The package declares required headers, so \`headers\` is required.` : `Options of a submission.`],
      type: hasRequired ? `JobSubmitOptions<${hType}> & { readonly headers: ${hType} }` : `JobSubmitOptions<${hType}>`,
    });
    const members = pkg.jobs.map((j) => {
      const n = jobNames(j);
      typeNames.push(n.input, n.output);
      if (j.error !== undefined) typeNames.push(n.error);
      return [
        jsDoc(j.description ?? `Job "${j.name}".`, "  "),
        `  readonly ${propertyKey(j.ident)}: {`,
        jsDoc(
          `Validates the input and headers, then submits job "${j.name}" of package "${pkg.name}".\n` +
            `Rejects with a ValidationError listing every violation, enqueuing nothing, when either is invalid.`,
          "    ",
        ),
        `    submit(input: ${n.input}, options${hasRequired ? "" : "?"}: SubmitOptions): Promise<JobHandle<${n.output}, ${n.error}>>;`,
        `  };`,
      ].join("\n");
    });
    statements.push(`${jsDoc(`Submits the jobs of package "${pkg.name}".`)}\nexport interface JobsClient {\n${members.join("\n")}\n}`);
  }

  if (hasSignals) {
    imports.value(RUNTIME_MODULE, "requireSignalSender").type(RUNTIME_MODULE, "SignalDelivery", "SignalSender");
    statements.push({
      kind: StructureKind.Interface,
      name: "SignalsClient",
      isExported: true,
      docs: [`Sends the signals of package "${pkg.name}".`],
      methods: pkg.signals.map((s) => {
        const n = signalNames(s);
        typeNames.push(n.params, n.payload);
        return {
          name: propertyKey(s.ident),
          docs: [
            `${docText(s.description ?? `Signal "${s.name}".`)}\n\nBuilds the correlation key \`${docText(s.keyTemplate)}\` from \`params\`, validates and encodes\nthe payload, then sends it. Rejects with a ValidationError, sending nothing, when either is invalid.`,
          ],
          parameters: [
            { name: "params", type: n.params },
            { name: "payload", type: n.payload },
          ],
          returnType: "Promise<SignalDelivery>",
        };
      }),
    });
  }

  if (hasWorkflows) {
    imports.value(RUNTIME_MODULE, "workflowClient").type(RUNTIME_MODULE, "SubmitOutcome", "WorkflowClient", "WorkflowHost", "WorkflowSubmitOptions");
    if (!typeNames.includes(hType)) typeNames.push(hType);
    const options = hasRequired ? `WorkflowSubmitOptions<${hType}> & { readonly headers: ${hType} }` : `WorkflowSubmitOptions<${hType}>`;
    for (const w of pkg.workflows) {
      const n = workflowNames(w);
      typeNames.push(n.input, n.result);
      if (w.error !== undefined) typeNames.push(n.error);
      const waited = pkg.signals.filter((sig) => w.steps.some((st) => st.waitsFor === sig.name));
      const senders = waited.map((sig) => {
        const sn = signalNames(sig);
        if (!typeNames.includes(sn.params)) typeNames.push(sn.params, sn.payload);
        imports.type(RUNTIME_MODULE, "SignalDelivery");
        return [
          jsDoc(`Sends signal "${sig.name}" (key \`${sig.keyTemplate}\`), validated; a waiting step of this workflow is entered with it.`, "    "),
          `    ${propertyKey(sig.ident)}(params: ${sn.params}, payload: ${sn.payload}): Promise<SignalDelivery>;`,
        ].join("\n");
      });
      statements.push(
        [
          jsDoc(`Runs of workflow "${w.name}" of package "${pkg.name}"${w.description === undefined ? "." : `: ${w.description}`}`),
          `export interface ${n.client} extends WorkflowClient<${n.result}, ${n.error}> {`,
          jsDoc(
            `Validates the input and headers, then submits a run entered at step "${w.steps[0]?.name ?? ""}".\n` +
              `Idempotent on \`(runId, input)\`. Rejects with a ValidationError, enqueuing nothing, when either is invalid.`,
            "  ",
          ),
          `  submit(input: ${n.input}, options${hasRequired ? "" : "?"}: ${options}): Promise<SubmitOutcome>;`,
          jsDoc(`Senders of the signals this workflow's steps wait for.`, "  "),
          `  readonly signals: {${senders.length === 0 ? "" : `\n${senders.join("\n")}\n  `}};`,
          `}`,
        ].join("\n"),
      );
    }
    statements.push({
      kind: StructureKind.Interface,
      name: "WorkflowsClient",
      isExported: true,
      docs: [`Submits and follows the workflows of package "${pkg.name}".`],
      properties: pkg.workflows.map((w) => ({ name: propertyKey(w.ident), isReadonly: true, type: workflowNames(w).client })),
    });
  }

  const parts = [
    ...(hasJobs ? ["([T] extends [JobSubmitter] ? JobsClient : unknown)"] : []),
    ...(hasSignals ? ["([T] extends [SignalSender] ? { readonly signals: SignalsClient } : unknown)"] : []),
    ...(hasWorkflows ? ["([T] extends [WorkflowHost] ? WorkflowsClient : unknown)"] : []),
  ];
  const bound =
    [...(hasJobs ? ["JobSubmitter"] : []), ...(hasSignals ? ["SignalSender"] : []), ...(hasWorkflows ? ["WorkflowHost"] : [])].join(" | ") || "object";
  statements.push({
    kind: StructureKind.TypeAlias,
    name: "Client",
    isExported: true,
    typeParameters: [{ name: "T" }],
    docs: ["The client over a target: job submission when it is a job runner, signals when it can send them."],
    type: parts.length === 0 ? "unknown" : parts.join(" & "),
  });

  const jobEntries = pkg.jobs.map((j) => {
    const n = jobNames(j);
    defs.push(n.definition);
    return `  ${propertyKey(j.ident)}: {
    async submit(input, options) {
      ${n.definition}.input.assert(input);
      headers.validator.assert(options${hasRequired ? "" : "?"}.headers ?? {});
      return requireSubmitter(target, PACKAGE).submit(${n.definition}, input, options);
    },
  },`;
  });
  const signalEntries = pkg.signals.map((s) => {
    const n = signalNames(s);
    defs.push(n.definition);
    return `  async ${propertyKey(s.ident)}(params, payload) {
    const key = ${n.definition}.key(params);
    const bytes = ${n.definition}.encode(payload);
    return requireSignalSender(target, PACKAGE).signal(key, bytes);
  },`;
  });
  const workflowEntries = pkg.workflows.map((w) => {
    const n = workflowNames(w);
    defs.push(n.definition);
    return `  ${propertyKey(w.ident)}: workflowClient(${n.definition}, target, PACKAGE) as unknown as ${n.client},`;
  });
  defs.push("PACKAGE");
  const body: string[] = [];
  if (hasJobs) body.push(`const jobs: JobsClient = {\n${jobEntries.join("\n")}\n};`);
  if (hasSignals) body.push(`const signals: SignalsClient = {\n${signalEntries.join("\n")}\n};`);
  // Each workflow client checks its target on every call, so building it over a job runner is harmless.
  if (hasWorkflows) body.push(`const workflows: WorkflowsClient = {\n${workflowEntries.join("\n")}\n};`);
  const members = [...(hasJobs ? ["...jobs"] : []), ...(hasWorkflows ? ["...workflows"] : []), ...(hasSignals ? ["signals"] : [])].join(", ");
  // The object holds both halves; the type exposes only what the target supports.
  body.push(`return { ${members} } as unknown as Client<T>;`);
  statements.push({
    kind: StructureKind.Function,
    name: "client",
    isExported: true,
    typeParameters: [{ name: "T", constraint: bound }],
    parameters: [{ name: "target", type: "T" }],
    returnType: "Client<T>",
    docs: [
      `A typed client of package "${pkg.name}" over a job runner${hasSignals ? " or a signal sender (a workflow runtime)" : hasWorkflows ? " or a workflow runtime" : ""}, ` +
        `or over a TaqubaClient to reach the process that owns the store from any other process.\n\n@example\n` +
        (!hasJobs && hasWorkflows
          ? `const { runId } = await ${pkg.ident}.client(runtime).${pkg.workflows[0]?.ident ?? ""}.submit(input${hasRequired ? ", { headers }" : ""});`
          : `const handle = await ${pkg.ident}.client(runner).${pkg.jobs[0]?.ident ?? "someJob"}.submit(input${hasRequired ? ", { headers }" : ""});`),
    ],
    statements: body.join("\n"),
  });

  imports.value("./definitions.js", ...defs);
  imports.type("./types.js", ...typeNames);
  return printFile(source, imports, statements);
}
