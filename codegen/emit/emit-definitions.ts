/**
 * @module Emits `definitions.ts`: name constants, typed validators and one
 * definition value per job and signal.
 */

import { contractHash, jobContract, workflowContract } from "../contract/contract.js";
import { headersType, jobNames, scheduleInputHandlerType, signalNames, stepNames, validatorName, workflowNames, RUNTIME_MODULE } from "./generated-names.js";
import { camelCase, compareCodeUnits, jsDoc, propertyKey } from "./names.js";
import type { FlowControlModel, PackageModel } from "../analyse/spec-model.js";
import { Imports, printFile } from "../print/ts-file.js";

/** The `sensitive` list of the header set; absent when no header is marked, so such output is unchanged. */
function sensitiveLine(pkg: PackageModel): string {
  const names = pkg.headers.filter((h) => h.sensitive).map((h) => JSON.stringify(h.name));
  return names.length === 0 ? "" : `\n  sensitive: [${names.join(", ")}],`;
}

function constant(name: string, type: string | undefined, initializer: string, doc?: string): string {
  const head = doc === undefined ? "" : `${jsDoc(doc)}\n`;
  return `${head}export const ${name}${type === undefined ? "" : `: ${type}`} = ${initializer};`;
}

function record(entries: ReadonlyArray<readonly [string, string]>): string {
  if (entries.length === 0) return "{}";
  return `{\n${entries.map(([k, v]) => `  ${propertyKey(k)}: ${v},`).join("\n")}\n}`;
}

function validator(type: string, label: string): string {
  return `createValidator<${type}>(${JSON.stringify(label)}, raw.${validatorName(type)})`;
}

/** A JSON value with every object's keys in code-unit order, so emitted literals do not follow the YAML's order. */
function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(
    Object.entries(v)
      .sort(([a], [b]) => compareCodeUnits(a, b))
      .map(([k, x]) => [k, sortedKeys(x)]),
  );
}

/** The text of `definitions.ts`. */
export function emitDefinitions(pkg: PackageModel, source: string): string {
  const imports = new Imports().value(RUNTIME_MODULE, "createValidator", "defineHeaders").namespace("./validators.js", "raw");
  const hType = headersType(pkg);
  const typeNames = [hType];
  const statements: string[] = [];

  statements.push(constant("PACKAGE", undefined, JSON.stringify(pkg.name), "The spec package these definitions come from."));
  statements.push(
    constant("JOB_NAMES", undefined, `${record(pkg.jobs.map((j) => [j.ident, JSON.stringify(j.qualifiedName)]))} as const`, "Qualified job names, by job."),
  );
  statements.push(
    constant(
      "SIGNAL_NAMES",
      undefined,
      `${record(pkg.signals.map((s) => [s.ident, JSON.stringify(s.qualifiedName)]))} as const`,
      "Qualified signal names, by signal.",
    ),
  );
  statements.push(
    constant("HEADER_NAMES", undefined, `${record(pkg.headers.map((h) => [h.ident, JSON.stringify(h.name)]))} as const`, "Header names, by header."),
  );
  imports.type(RUNTIME_MODULE, "HeaderSetDefinition");
  statements.push(
    constant(
      "headers",
      `HeaderSetDefinition<${hType}>`,
      `defineHeaders({
  package: PACKAGE,
  names: [${pkg.headers.map((h) => JSON.stringify(h.name)).join(", ")}],
  required: [${pkg.headers
    .filter((h) => h.required)
    .map((h) => JSON.stringify(h.name))
    .join(", ")}],${sensitiveLine(pkg)}
  validator: ${validator(hType, `${pkg.name} headers`)},
})`,
      `The header set of package "${pkg.name}".`,
    ),
  );

  if (pkg.jobs.length > 0) imports.value(RUNTIME_MODULE, "defineJob").type(RUNTIME_MODULE, "JobDefinition");
  for (const j of pkg.jobs) {
    const n = jobNames(j);
    typeNames.push(n.input, n.output);
    if (j.error !== undefined) typeNames.push(n.error);
    const lines = [
      `  name: JOB_NAMES.${j.ident},`,
      `  package: PACKAGE,`,
      ...(j.description === undefined ? [] : [`  description: ${JSON.stringify(j.description)},`]),
      `  input: ${validator(n.input, `${j.qualifiedName} input`)},`,
      `  output: ${validator(n.output, `${j.qualifiedName} output`)},`,
      ...(j.error === undefined ? [] : [`  error: ${validator(n.error, `${j.qualifiedName} error`)},`]),
      `  headers,`,
      ...(j.idempotencyKey === undefined ? [] : [`  idempotencyKey: ${JSON.stringify(j.idempotencyKey)},`]),
      ...(j.maxAttempts === undefined ? [] : [`  maxAttempts: ${j.maxAttempts},`]),
      ...(j.priority === undefined ? [] : [`  priority: ${j.priority},`]),
      `  contractHash: ${JSON.stringify(contractHash(jobContract(j, pkg)))},`,
      ...flowControlLines(j.flowControl),
    ];
    const alias = `${j.typeName}Job`;
    statements.push(
      `${jsDoc(`The definition type of job "${j.name}".`)}\nexport type ${alias} = JobDefinition<\n  ${[JSON.stringify(j.qualifiedName), n.input, n.output, n.error, hType].join(",\n  ")}\n>;`,
    );
    statements.push(constant(n.definition, alias, `defineJob({\n${lines.join("\n")}\n})`, j.description ?? `Job "${j.name}".`));
  }

  if (pkg.signals.length > 0) imports.value(RUNTIME_MODULE, "defineSignal").type(RUNTIME_MODULE, "SignalDefinition");
  for (const s of pkg.signals) {
    const n = signalNames(s);
    typeNames.push(n.params, n.payload);
    const alias = `${s.typeName}Signal`;
    statements.push(
      `${jsDoc(`The definition type of signal "${s.name}".`)}\nexport type ${alias} = SignalDefinition<${JSON.stringify(s.qualifiedName)}, ${n.params}, ${n.payload}>;`,
    );
    statements.push(
      constant(
        n.definition,
        alias,
        `defineSignal({
  name: SIGNAL_NAMES.${s.ident},
  package: PACKAGE,
  keyTemplate: ${JSON.stringify(s.keyTemplate)},
  params: ${validator(n.params, `${s.qualifiedName} key parameters`)},
  payload: ${validator(n.payload, `${s.qualifiedName} payload`)},
})`,
        s.description ?? `Signal "${s.name}".`,
      ),
    );
  }

  if (pkg.workflows.length > 0) {
    imports.value(RUNTIME_MODULE, "defineWorkflow").type(RUNTIME_MODULE, "WorkflowDefinition");
    statements.push(
      constant(
        "WORKFLOW_NAMES",
        undefined,
        `${record(pkg.workflows.map((w) => [w.ident, JSON.stringify(w.qualifiedName)]))} as const`,
        "Qualified workflow names, by workflow.",
      ),
    );
  }
  for (const w of pkg.workflows) {
    const n = workflowNames(w);
    typeNames.push(n.input, n.result);
    if (w.error !== undefined) typeNames.push(n.error);
    imports.type("./workflows.js", n.handler);
    const waited = new Map<string, string>();
    const steps = w.steps.map((st) => {
      const sn = stepNames(w, st);
      if (sn.ownPayload) typeNames.push(sn.payload);
      const payload =
        st === w.steps[0]
          ? validator(n.input, `${w.qualifiedName} input`)
          : st.payload === undefined
            ? `createValidator<null>(${JSON.stringify(`${w.qualifiedName} step ${st.name} payload`)}, raw.${validatorName(`${w.typeName}_null`)})`
            : validator(sn.payload, `${w.qualifiedName} step ${st.name} payload`);
      const signal = pkg.signals.find((x) => x.name === st.waitsFor);
      if (signal !== undefined) waited.set(signal.ident, signalNames(signal).definition);
      const fields = [
        `method: ${JSON.stringify(st.ident)}`,
        `payload: ${payload}`,
        ...(signal === undefined ? [] : [`signal: ${signalNames(signal).definition}`]),
        ...(st.timeoutMs === undefined ? [] : [`timeoutMs: ${st.timeoutMs}`]),
        `next: [${st.next.map((x) => JSON.stringify(x)).join(", ")}]`,
        ...(st.starts.length === 0
          ? []
          : [
              `starts: [${st.starts
                .map(
                  (r) =>
                    `{ path: [${JSON.stringify(camelCase(r.package))}, ${JSON.stringify(camelCase(r.workflow))}], workflow: ${JSON.stringify(`${r.package}.${r.workflow}`)} }`,
                )
                .join(", ")}]`,
            ]),
        ...(st.waitsForChild === undefined ? [] : [`child: ${JSON.stringify(`${st.waitsForChild.package}.${st.waitsForChild.workflow}`)}`]),
      ];
      return `    ${propertyKey(st.name)}: {\n${fields.map((f) => `      ${f},`).join("\n")}\n    },`;
    });
    const lines = [
      `  name: WORKFLOW_NAMES.${w.ident},`,
      `  package: PACKAGE,`,
      ...(w.description === undefined ? [] : [`  description: ${JSON.stringify(w.description)},`]),
      `  input: ${validator(n.input, `${w.qualifiedName} input`)},`,
      `  result: ${validator(n.result, `${w.qualifiedName} result`)},`,
      ...(w.error === undefined ? [] : [`  error: ${validator(n.error, `${w.qualifiedName} error`)},`]),
      `  headers,`,
      `  entry: ${JSON.stringify(w.steps[0]?.name ?? "")},`,
      `  steps: {\n${steps.join("\n")}\n  },`,
      `  signals: ${
        waited.size === 0
          ? "{}"
          : `{ ${[...waited]
              .sort(([a], [b]) => compareCodeUnits(a, b))
              .map(([k, v]) => `${propertyKey(k)}: ${v}`)
              .join(", ")} }`
      },`,
      `  contractHash: ${JSON.stringify(contractHash(workflowContract(w, pkg)))},`,
      ...flowControlLines(w.flowControl),
    ];
    const typeArgs = [JSON.stringify(w.qualifiedName), n.input, n.result, n.error, hType, n.handler];
    statements.push(
      `${jsDoc(`The definition type of workflow "${w.name}".`)}\nexport type ${n.definitionType} = WorkflowDefinition<\n  ${typeArgs.join(",\n  ")}\n>;`,
    );
    statements.push(
      constant(
        n.definition,
        n.definitionType,
        `defineWorkflow<\n  ${typeArgs.join(",\n  ")}\n>({\n${lines.join("\n")}\n})`,
        w.description ?? `Workflow "${w.name}".`,
      ),
    );
  }

  if (pkg.schedules.length > 0) imports.value(RUNTIME_MODULE, "defineSchedule").type(RUNTIME_MODULE, "ScheduleDefinition");
  for (const sc of pkg.schedules) {
    const target = sc.target?.kind === "job" ? pkg.jobs.find((j) => j.name === sc.target?.name) : pkg.workflows.find((w) => w.name === sc.target?.name);
    if (target === undefined) continue; // reported by the checks; never reached with errors
    const targetConst = target.kind === "job" ? jobNames(target).definition : workflowNames(target).definition;
    const literal = (v: unknown) => JSON.stringify(sortedKeys(v), null, 2).replace(/\n/g, "\n  ");
    const lines = [
      `  id: ${JSON.stringify(sc.name)},`,
      `  package: PACKAGE,`,
      ...(sc.description === undefined ? [] : [`  description: ${JSON.stringify(sc.description)},`]),
      `  cron: ${JSON.stringify(sc.cron)},`,
      `  timezone: ${JSON.stringify(sc.timezone)},`,
      `  target: ${targetConst},`,
      sc.inputFromHandler ? `  inputFrom: "handler",` : `  input: ${literal(sc.input ?? null)},`,
      `  headers: ${literal(sc.headers)},`,
      `  overlap: ${JSON.stringify(sc.overlap)},`,
      `  catchUp: ${typeof sc.catchUp === "string" ? JSON.stringify(sc.catchUp) : `{ allWithinMs: ${sc.catchUp.allWithinMs} }`},`,
      `  jitterMs: ${sc.jitterMs},`,
      ...(sc.priority === undefined ? [] : [`  priority: ${sc.priority},`]),
      ...(sc.maxAttempts === undefined ? [] : [`  maxAttempts: ${sc.maxAttempts},`]),
    ];
    const doc = sc.description ?? `Schedule "${sc.name}": ${sc.cron} (${sc.timezone}), starts ${target.kind} "${target.name}".`;
    statements.push(constant(`${sc.ident}Schedule`, "ScheduleDefinition", `defineSchedule({\n${lines.join("\n")}\n})`, doc));
    if (sc.inputFromHandler) {
      const inputType = target.kind === "job" ? jobNames(target).input : workflowNames(target).input;
      imports.type(RUNTIME_MODULE, "TypedScheduleInputHandler");
      statements.push(
        `${jsDoc(`Computes the input of each tick of schedule "${sc.name}" (the input of ${target.kind} "${target.name}"); its answer is validated before the run starts.`)}\nexport type ${scheduleInputHandlerType(sc)} = TypedScheduleInputHandler<${inputType}>;`,
      );
    }
  }

  statements.push(
    constant("jobs", undefined, `${record(pkg.jobs.map((j) => [j.ident, jobNames(j).definition]))} as const`, "Every job definition of the package, by job."),
  );
  statements.push(
    constant(
      "signals",
      undefined,
      `${record(pkg.signals.map((s) => [s.ident, signalNames(s).definition]))} as const`,
      "Every signal definition of the package, by signal.",
    ),
  );
  if (pkg.workflows.length > 0) {
    statements.push(
      constant(
        "workflows",
        undefined,
        `${record(pkg.workflows.map((w) => [w.ident, workflowNames(w).definition]))} as const`,
        "Every workflow definition of the package, by workflow.",
      ),
    );
  }
  const computed = pkg.schedules.filter((sc) => sc.inputFromHandler);
  if (pkg.schedules.length > 0) {
    statements.push(
      constant(
        "schedules",
        undefined,
        `${record(pkg.schedules.map((sc) => [sc.ident, `${sc.ident}Schedule`]))} as const`,
        computed.length === 0
          ? "Every schedule of the package, by schedule: pass them to upsertSchedules(runtime, schedules)."
          : "Every schedule of the package, by schedule; those computing their input have no handler here: pass schedulesWith(inputs) to upsertSchedules instead.",
      ),
    );
  }
  if (computed.length > 0) {
    imports.value(RUNTIME_MODULE, "bindScheduleInput");
    statements.push(
      `${jsDoc(`One input handler per schedule of package "${pkg.name}" declared with input_from: handler; leaving one out is a compile error.`)}\nexport interface ScheduleInputHandlers {\n${computed
        .map((sc) => `  readonly ${propertyKey(sc.ident)}: ${scheduleInputHandlerType(sc)};`)
        .join("\n")}\n}`,
    );
    const entries = pkg.schedules.map((sc) =>
      sc.inputFromHandler ? ([sc.ident, `bindScheduleInput(${sc.ident}Schedule, inputs.${sc.ident})`] as const) : ([sc.ident, `${sc.ident}Schedule`] as const),
    );
    statements.push(
      `${jsDoc("Every schedule of the package with its input handlers bound: pass the result to upsertSchedules(runtime, ...) in every process that runs a worker. A missing handler throws here.")}\nexport function schedulesWith(inputs: ScheduleInputHandlers) {\n  return ${record(entries).replace(/\n/g, "\n  ")} as const;\n}`,
    );
  }
  imports.type("./types.js", ...typeNames);
  return printFile(source, imports, statements);
}

/** The `flowControl` property of a definition, when the spec declares `concurrency`, `rate_limit` or `debounce`. */
function flowControlLines(f: FlowControlModel | undefined): string[] {
  if (f === undefined) return [];
  const key = (k: string | undefined) => (k === undefined ? "" : `, key: ${JSON.stringify(k)}`);
  const parts: string[] = [];
  if (f.concurrency !== undefined) parts.push(`concurrency: { limit: ${f.concurrency.limit}${key(f.concurrency.key)} }`);
  if (f.rateLimit !== undefined) parts.push(`rateLimit: { limit: ${f.rateLimit.limit}, periodMs: ${f.rateLimit.periodMs}${key(f.rateLimit.key)} }`);
  if (f.debounce !== undefined) parts.push(`debounce: { periodMs: ${f.debounce.periodMs}${key(f.debounce.key)} }`);
  return [`  flowControl: { ${parts.join(", ")} },`];
}
