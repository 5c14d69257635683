/**
 * @module The validated, frozen model of spec packages that emitters read.
 *
 * Every node is readonly, carries a `kind` discriminant and the path of the
 * YAML entry it came from (for diagnostics), and lists its children sorted in
 * code-unit order, so emission never depends on the order of the YAML.
 */

import type { SpecPath } from "./load-spec.js";

/** A JSON value, as schemas hold them. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** A JSON Schema as written in the spec (draft 7 subset), deep-frozen. `$ref`s name `#/types/<Name>`. */
export type JsonSchema = { readonly [key: string]: JsonValue };

/** A named shared schema (`types:`), emitted as a named TypeScript type. */
export interface TypeModel {
  readonly kind: "type";
  readonly name: string;
  readonly schema: JsonSchema;
  readonly path: SpecPath;
}

/** One typed header. */
export interface HeaderModel {
  readonly kind: "header";
  readonly name: string;
  /** camelCase, for name constants. */
  readonly ident: string;
  readonly required: boolean;
  /** Its value is a secret: the runtime redacts it in logs and spans. */
  readonly sensitive: boolean;
  readonly description: string | undefined;
  /** The header's string schema, without the spec-only `optional` and `sensitive` keys. */
  readonly schema: JsonSchema;
  readonly path: SpecPath;
}

/** One signal. */
export interface SignalModel {
  readonly kind: "signal";
  readonly name: string;
  /** `<package>.<name>`. */
  readonly qualifiedName: string;
  /** `paymentReceived`. */
  readonly ident: string;
  /** `PaymentReceived`. */
  readonly typeName: string;
  readonly description: string | undefined;
  readonly keyTemplate: string;
  /** An object schema whose properties are the key parameters, all required. */
  readonly params: JsonSchema;
  readonly payload: JsonSchema;
  readonly path: SpecPath;
}

/** Flow control of a job or workflow (`concurrency`, `rate_limit`, `debounce`): limits and key templates as written. */
export interface FlowControlModel {
  readonly concurrency: { readonly limit: number; readonly key: string | undefined } | undefined;
  readonly rateLimit: { readonly limit: number; readonly periodMs: number; readonly key: string | undefined } | undefined;
  readonly debounce: { readonly periodMs: number; readonly key: string } | undefined;
}

/** One job. */
export interface JobModel {
  readonly kind: "job";
  readonly name: string;
  readonly qualifiedName: string;
  readonly ident: string;
  readonly typeName: string;
  readonly description: string | undefined;
  readonly input: JsonSchema;
  readonly output: JsonSchema;
  readonly error: JsonSchema | undefined;
  readonly idempotencyKey: string | undefined;
  readonly maxAttempts: number | undefined;
  readonly priority: number | undefined;
  /** Undefined when it declares none of `concurrency`, `rate_limit` and `debounce`. */
  readonly flowControl: FlowControlModel | undefined;
  readonly path: SpecPath;
}

/** One step of a workflow. */
export interface StepModel {
  readonly kind: "step";
  readonly name: string;
  /** The handler method and `ctx.next` member, e.g. `awaitPayment`. */
  readonly ident: string;
  /** `AwaitPayment`. */
  readonly typeName: string;
  readonly description: string | undefined;
  /** The declared payload; undefined on the entry step (it takes the input) and for steps entered with null. */
  readonly payload: JsonSchema | undefined;
  readonly waitsFor: string | undefined;
  readonly timeoutMs: number | undefined;
  readonly next: readonly string[];
  /** Workflows the step may start as child runs (`starts:`), in YAML order. */
  readonly starts: readonly WorkflowRefModel[];
  /** The workflow whose child run's end enters the step (`waits_for_child:`). */
  readonly waitsForChild: WorkflowRefModel | undefined;
  readonly path: SpecPath;
}

/** A reference to a workflow of this package or (`<package>:<workflow>`) of another. */
export interface WorkflowRefModel {
  /** The package, this one's name when the reference names none. */
  readonly package: string;
  readonly workflow: string;
  /** Whether it names another package. */
  readonly foreign: boolean;
  /** Where the reference is written, for diagnostics. */
  readonly path: SpecPath;
}

/** One workflow. Steps keep their YAML order: the first step is the entry and receives the input. */
export interface WorkflowModel {
  readonly kind: "workflow";
  readonly name: string;
  readonly qualifiedName: string;
  readonly ident: string;
  readonly typeName: string;
  readonly description: string | undefined;
  readonly input: JsonSchema;
  readonly result: JsonSchema;
  readonly error: JsonSchema | undefined;
  readonly steps: readonly StepModel[];
  /** Undefined when it declares none of `concurrency`, `rate_limit` and `debounce`. */
  readonly flowControl: FlowControlModel | undefined;
  readonly path: SpecPath;
}

/** One cron schedule: each tick starts a run of a job or workflow of the package. */
export interface ScheduleModel {
  readonly kind: "schedule";
  /** The schedule id (also the prefix of its run ids). */
  readonly name: string;
  /** `nightlyReport`. */
  readonly ident: string;
  readonly description: string | undefined;
  readonly cron: string;
  readonly timezone: string;
  readonly target: { readonly kind: "workflow" | "job"; readonly name: string } | undefined;
  /** Both `workflow` and `job` were given (an error; `target` is then the workflow). */
  readonly bothTargets: boolean;
  /** The fixed input; undefined when the spec gives none. */
  readonly input: JsonValue | undefined;
  /** `input_from: handler`: each tick's input is computed by a handler. */
  readonly inputFromHandler: boolean;
  readonly headers: Readonly<Record<string, string>>;
  readonly overlap: "skip" | "buffer_one" | "allow";
  readonly catchUp: "none" | "last" | { readonly allWithinMs: number };
  readonly jitterMs: number;
  readonly priority: number | undefined;
  readonly maxAttempts: number | undefined;
  readonly path: SpecPath;
}

/** One spec file: one package. */
export interface PackageModel {
  readonly kind: "package";
  readonly file: string;
  readonly name: string;
  /** camelCase namespace identifier. */
  readonly ident: string;
  /** PascalCase prefix, e.g. for `BillingHeaders`. */
  readonly typeName: string;
  readonly description: string | undefined;
  readonly types: readonly TypeModel[];
  readonly headers: readonly HeaderModel[];
  readonly signals: readonly SignalModel[];
  readonly jobs: readonly JobModel[];
  readonly workflows: readonly WorkflowModel[];
  readonly schedules: readonly ScheduleModel[];
}

/** Freezes a value and everything it holds. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
