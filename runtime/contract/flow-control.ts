/**
 * @module Flow control of a typed job or workflow, as a spec declares it
 * (`concurrency`, `rate_limit`, `debounce`): the flow rule the runtime defines on its
 * step queue, and the keys of one submission, built from its headers and
 * input by key templates such as `"{tenant_id}"`. Pure.
 *
 * A placeholder names a header when its one segment is a header the
 * package declares, else a field of the input (dotted for nested fields).
 * The generator refuses a name that is both, or neither.
 */
import { ValidationError } from "../errors.js";
import type { FlowRule } from "../queue/admission.js";
import type { RunDebounce, RunFlow } from "../workflow/runs/run-types.js";
import { compileKeyTemplate, parseKeyTemplate } from "./key-template.js";

/** What generated code passes to `defineJob` / `defineWorkflow`. */
export interface FlowControlSpec {
  /** At most `limit` steps of the definition worked at once per key. */
  readonly concurrency?: { readonly limit: number; readonly key?: string };
  /** At most `limit` steps of the definition claimed per key in any window of `periodMs`. */
  readonly rateLimit?: { readonly limit: number; readonly periodMs: number; readonly key?: string };
  /** Of the submissions with one key within `periodMs`, the last wins (see `RunOptions.debounce`). */
  readonly debounce?: { readonly periodMs: number; readonly key: string };
}

/** A definition's compiled flow control. */
export interface FlowControl {
  /** The rule's name: the definition's qualified name. */
  readonly rule: string;
  /** The limits, for `Queue.defineFlowRules`. */
  readonly limits: FlowRule;
  /** The declared templates, for tools. */
  readonly spec: FlowControlSpec;
  /** Whether a key reads the input (a job group then cannot share one key among its members). */
  readonly readsInput: boolean;
  /** The run's flow: the rule and the keys of this submission. Throws `ValidationError` when a named value is missing. */
  flowOf(input: unknown, headers: Readonly<Record<string, string>>): RunFlow;
  /** Whether the definition declares a limit (`concurrency` or `rate_limit`): only then is its rule defined. */
  readonly hasLimits: boolean;
  /**
   * The run options of one submission: its `flow` (when the definition has
   * limits) and its `debounce` (when it declares one; the key is prefixed
   * with the rule, so definitions never share a window). Throws
   * `ValidationError` when a named value is missing.
   */
  runOptionsOf(input: unknown, headers: Readonly<Record<string, string>>): { flow?: RunFlow; debounce?: RunDebounce };
}

/** Compiles a definition's flow control; undefined when it declares none. */
export function compileFlowControl(rule: string, headerNames: readonly string[], spec: FlowControlSpec | undefined): FlowControl | undefined {
  if (spec === undefined || (spec.concurrency === undefined && spec.rateLimit === undefined && spec.debounce === undefined)) return undefined;
  const declared = new Set(headerNames);
  let readsInput = false;
  const keyFn = (template: string | undefined): ((input: unknown, headers: Readonly<Record<string, string>>) => string) | undefined => {
    if (template === undefined) return undefined;
    const build = compileKeyTemplate(template);
    const fromHeaders: string[] = [];
    for (const p of parseKeyTemplate(template)) {
      if (typeof p === "string") continue;
      if (p.length === 1 && declared.has(p[0]!)) fromHeaders.push(p[0]!);
      else readsInput = true;
    }
    return (input, headers) => {
      const values: Record<string, unknown> = input !== null && typeof input === "object" && !Array.isArray(input) ? { ...(input as object) } : {};
      for (const h of fromHeaders) values[h] = Object.hasOwn(headers, h) ? headers[h] : undefined;
      return build(values);
    };
  };
  const concurrencyKey = keyFn(spec.concurrency?.key);
  const rateKey = keyFn(spec.rateLimit?.key);
  const debounceKey = keyFn(spec.debounce?.key);
  const hasLimits = spec.concurrency !== undefined || spec.rateLimit !== undefined;
  const limits: FlowRule = {
    ...(spec.concurrency === undefined ? {} : { concurrency: { limit: spec.concurrency.limit } }),
    ...(spec.rateLimit === undefined ? {} : { rateLimit: { limit: spec.rateLimit.limit, periodMs: spec.rateLimit.periodMs } }),
  };
  const built = <T>(make: () => T): T => {
    try {
      return make();
    } catch (e) {
      if (e instanceof ValidationError)
        throw new ValidationError(`the flow-control key of "${rule}" cannot be built from this submission's headers and input`, e.issues);
      throw e;
    }
  };
  const flowOf = (input: unknown, headers: Readonly<Record<string, string>>): RunFlow =>
    built(() => ({
      rule,
      ...(concurrencyKey === undefined ? {} : { concurrencyKey: concurrencyKey(input, headers) }),
      ...(rateKey === undefined ? {} : { rateKey: rateKey(input, headers) }),
    }));
  return Object.freeze({
    rule,
    limits,
    spec,
    readsInput,
    hasLimits,
    flowOf,
    runOptionsOf(input: unknown, headers: Readonly<Record<string, string>>): { flow?: RunFlow; debounce?: RunDebounce } {
      return {
        ...(hasLimits ? { flow: flowOf(input, headers) } : {}),
        ...(spec.debounce === undefined || debounceKey === undefined
          ? {}
          : { debounce: { key: `${rule}:${built(() => debounceKey(input, headers))}`, periodMs: spec.debounce.periodMs } }),
      };
    },
  });
}
