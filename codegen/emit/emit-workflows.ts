/**
 * @module Emits `workflows.ts`: per workflow, one context, continuation set
 * and transition type per step, the handler interface (one method per step),
 * and `registerWorkflows`, whose `handlers` argument must name every workflow.
 *
 * The types make the step graph a compile-time fact: `ctx.next` of a step
 * holds exactly the steps it may continue to, each taking that step's payload
 * type (and, for a waiting step, its signal's key parameters), and a step
 * method returns only transitions to those steps or a result / error of the
 * workflow's types.
 */

import type { StatementStructures } from "ts-morph";
import { headersType, signalNames, stepNames, workflowNames, RUNTIME_MODULE } from "./generated-names.js";
import { docText, jsDoc, propertyKey } from "./names.js";
import type { PackageModel, StepModel, WorkflowModel, WorkflowRefModel } from "../analyse/spec-model.js";
import { camelCase } from "./names.js";
import { Imports, loadTsMorph, printFile } from "../print/ts-file.js";

/**
 * The type of the generated definition of a referenced workflow: a value of
 * this package's `definitions.ts` (imported by this file), or of the other
 * package's, through an import type, so nothing of the other package's
 * naming can clash with this one's.
 */
function definitionTypeOf(ref: WorkflowRefModel): string {
  const def = `${camelCase(ref.workflow)}Workflow`;
  return ref.foreign ? `typeof import(${JSON.stringify(`../${ref.package}/definitions.js`)}).${def}` : `typeof ${def}`;
}

/** `ctx.workflows` of a step: the workflows its spec lets it start, by package and workflow identifier. */
function workflowsType(s: StepModel, imports: Imports): string {
  if (s.starts.length === 0) return "";
  imports.type(RUNTIME_MODULE, "ChildWorkflow");
  const byPackage = new Map<string, WorkflowRefModel[]>();
  for (const r of s.starts) byPackage.set(r.package, [...(byPackage.get(r.package) ?? []), r]);
  const groups = [...byPackage.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(
      ([p, refs]) =>
        `readonly ${propertyKey(camelCase(p))}: { ${refs.map((r) => `readonly ${propertyKey(camelCase(r.workflow))}: ChildWorkflow<${definitionTypeOf(r)}>`).join("; ")} }`,
    );
  return `{ ${groups.join("; ")} }`;
}

function union(names: readonly string[]): string {
  return names.length === 0 ? "never" : names.map((n) => JSON.stringify(n)).join(" | ");
}

/** The declarations of one step: its continuations, transition and context types. */
function stepStatements(pkg: PackageModel, w: WorkflowModel, s: StepModel, imports: Imports, typeNames: string[]): string[] {
  const n = workflowNames(w);
  const sn = stepNames(w, s);
  const wName = JSON.stringify(w.qualifiedName);
  const members = s.next.flatMap((name) => {
    const target = w.steps.find((t) => t.name === name);
    if (target === undefined) return [];
    const tn = stepNames(w, target);
    const signal = pkg.signals.find((x) => x.name === target.waitsFor);
    if (target.waitsForChild !== undefined) {
      imports.type(RUNTIME_MODULE, "ChildWait");
      const child = target.waitsForChild;
      const bound = target.timeoutMs === undefined ? "" : `, or after ${target.timeoutMs} ms without its end`;
      return [
        jsDoc(
          `Continue to step "${target.name}" when a child run of workflow "${child.package}.${child.workflow}" ends${bound}: \`child.onComplete(ctx.next.${target.ident}, payload)\`.`,
          "  ",
        ),
        `  readonly ${propertyKey(target.ident)}: ChildWait<${wName}, ${JSON.stringify(target.name)}, ${tn.payload}, ${definitionTypeOf(child)}>;`,
      ];
    }
    if (signal !== undefined) {
      imports.type(RUNTIME_MODULE, "SignalContinuation");
      const params = signalNames(signal).params;
      typeNames.push(params);
      return [
        jsDoc(
          `Continue to step "${target.name}" when signal "${signal.name}" (\`${docText(signal.keyTemplate)}\`) arrives, or after ${target.timeoutMs ?? 0} ms without it.`,
          "  ",
        ),
        `  readonly ${propertyKey(target.ident)}: SignalContinuation<${wName}, ${JSON.stringify(target.name)}, ${tn.payload}, ${params}>;`,
      ];
    }
    imports.type(RUNTIME_MODULE, "Continuation");
    return [
      jsDoc(`Continue to step "${target.name}" now, or \`.after(delayMs, payload)\`.`, "  "),
      `  readonly ${propertyKey(target.ident)}: Continuation<${wName}, ${JSON.stringify(target.name)}, ${tn.payload}>;`,
    ];
  });
  const waited = pkg.signals.find((x) => x.name === s.waitsFor);
  if (waited !== undefined) typeNames.push(signalNames(waited).payload);
  let signalType = waited === undefined ? "undefined" : `${signalNames(waited).payload} | null`;
  if (s.waitsForChild !== undefined) {
    // A bounded wait may end without the child's end: the handler must branch on it.
    const outcome = s.timeoutMs === undefined ? "ChildOutcomeOf" : "ChildOutcomeOrTimeoutOf";
    imports.type(RUNTIME_MODULE, outcome);
    signalType = `${outcome}<${definitionTypeOf(s.waitsForChild)}>`;
  }
  const workflows = workflowsType(s, imports);
  const next = s.next.length === 0 ? "ends the run" : `continues to ${s.next.map((x) => `"${x}"`).join(", ")} or ends the run`;
  return [
    `${jsDoc(`The steps step "${s.name}" of workflow "${w.name}" may continue to.`)}\nexport interface ${sn.next} {${members.length === 0 ? "" : `\n${members.join("\n")}\n`}}`,
    `${jsDoc(`What step "${s.name}" returns: it ${next}.`)}\nexport type ${sn.transition} = StepTransition<${wName}, ${union(s.next)}, ${n.result}, ${n.error}>;`,
    `${jsDoc(
      `What the handler of step "${s.name}" receives beside its payload` +
        (s.waitsForChild !== undefined
          ? `; \`ctx.signal\` is the end of the child run of "${s.waitsForChild.package}.${s.waitsForChild.workflow}" it waited for` +
            (s.timeoutMs === undefined ? "." : `, or \`{ status: "timed_out", runId }\` when it had not ended within ${s.timeoutMs} ms.`)
          : waited === undefined
            ? "."
            : `; \`ctx.signal\` is the "${waited.name}" payload, or null when the wait timed out.`),
    )}\nexport type ${sn.context} = WorkflowStepContext<${wName}, ${sn.next}, ${n.result}, ${n.error}, ${headersType(pkg)}, ${signalType}${workflows === "" ? "" : `, ${workflows}`}>;`,
  ];
}

/** The text of `workflows.ts`. */
export function emitWorkflows(pkg: PackageModel, source: string): string {
  const { StructureKind } = loadTsMorph();
  const imports = new Imports().type(RUNTIME_MODULE, "StepTransition", "WorkflowRegistrar", "WorkflowStepContext");
  const typeNames = [headersType(pkg)];
  const defs: string[] = [];
  const statements: Array<string | StatementStructures> = [];

  for (const w of pkg.workflows) {
    const n = workflowNames(w);
    typeNames.push(n.input, n.result);
    if (w.error !== undefined) typeNames.push(n.error);
    defs.push(n.definition);
    for (const s of w.steps) {
      const sn = stepNames(w, s);
      if (sn.ownPayload) typeNames.push(sn.payload);
      statements.push(...stepStatements(pkg, w, s, imports, typeNames));
    }
    statements.push({
      kind: StructureKind.Interface,
      name: n.handler,
      isExported: true,
      docs: [
        `Implements workflow "${w.qualifiedName}"${w.description === undefined ? "." : `: ${docText(w.description)}`}\n\n` +
          `One method per step. Payloads (and signals) are validated before a method is called; the next\n` +
          `step's payload, the result and the typed error are validated before they are stored.`,
      ],
      methods: w.steps.map((s, i) => {
        const sn = stepNames(w, s);
        const about = s.description === undefined ? "" : ` ${docText(s.description)}`;
        const role =
          i === 0
            ? " The entry step: it receives the workflow input."
            : s.waitsFor === undefined
              ? ""
              : ` Entered when signal "${s.waitsFor}" arrives or its wait times out.`;
        return {
          name: propertyKey(s.ident),
          docs: [`Step "${s.name}".${about}${role}`],
          parameters: [
            { name: "payload", type: sn.payload },
            { name: "ctx", type: sn.context },
          ],
          returnType: `Promise<${sn.transition}>`,
        };
      }),
    });
  }

  statements.push({
    kind: StructureKind.Interface,
    name: "WorkflowHandlers",
    isExported: true,
    docs: [`One handler per workflow of package "${pkg.name}"; leaving one out is a compile error.`],
    properties: pkg.workflows.map((w) => ({ name: propertyKey(w.ident), isReadonly: true, type: workflowNames(w).handler })),
  });
  statements.push({
    kind: StructureKind.Function,
    name: "registerWorkflows",
    isExported: true,
    typeParameters: [{ name: "B", constraint: "WorkflowRegistrar" }],
    parameters: [
      { name: "registrar", type: "B" },
      { name: "handlers", type: "WorkflowHandlers" },
    ],
    returnType: "B",
    docs: [
      `Registers a handler for every workflow of package "${pkg.name}" on a builder (\`JobRunner.builder(queue, store)\`\n` +
        `or \`WorkflowDispatcher.builder()\`), which may hold the jobs and workflows of other packages too: one\n` +
        `runtime runs them all. Returns it.\n\n` +
        `@example\nconst runner = ${pkg.ident}.registerWorkflows(JobRunner.builder(queue, store), handlers).build();`,
    ],
    statements: [...pkg.workflows.map((w) => `registrar.register(${workflowNames(w).definition}, handlers.${w.ident});`), "return registrar;"].join("\n"),
  });

  imports.value("./definitions.js", ...defs);
  imports.type("./types.js", ...typeNames.filter((t) => t !== "never"));
  return printFile(source, imports, statements);
}
