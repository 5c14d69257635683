/**
 * @module The contract lock: the normalised contracts of a package, committed
 * beside its spec, and the classification of changes against it (pure).
 *
 * Inputs and signal payloads are read by new code but written by old
 * producers, so a change must keep accepting what was accepted before
 * (contravariance): a new required field, a removed field, a narrower type
 * or a tighter bound is breaking. Outputs and errors are written by new code
 * and read by old consumers, so a change must keep producing what they
 * expect (covariance): a removed or newly optional field, a wider type or a
 * new enum value is breaking. Changes the classifier cannot judge (inside
 * `oneOf`/`anyOf`/`allOf`) count as breaking, to be acknowledged.
 */

import { canonicalJson, contractHash, jobContract, signalContract, workflowContract } from "./contract.js";
import { compareCodeUnits } from "../emit/names.js";

import type { JsonSchema, JsonValue, PackageModel } from "../analyse/spec-model.js";

/** Where the lock of a spec file lives: beside it, `billing.taquba.yaml` -> `billing.taquba.lock.json`. */
export function lockPathFor(specFile: string): string {
  return `${specFile.replace(/\.ya?ml$/, "")}.lock.json`;
}

/** One package's lock: every job's, signal's and workflow's contract with its hash. */
export interface ContractLock {
  readonly lockVersion: 1;
  readonly package: string;
  readonly jobs: { readonly [name: string]: { readonly hash: string; readonly contract: JsonValue } };
  readonly signals: { readonly [name: string]: { readonly hash: string; readonly contract: JsonValue } };
  /** Present only when the package declares workflows, so locks of packages without them are unchanged. */
  readonly workflows?: { readonly [name: string]: { readonly hash: string; readonly contract: JsonValue } };
}

/** One difference between a lock and the current spec. */
export interface ContractChange {
  readonly breaking: boolean;
  /** E.g. `job "email.send"`. */
  readonly entry: string;
  /** Where in the contract, e.g. `input.to`. */
  readonly at: string;
  readonly message: string;
}

/** Renders a change as one line for the terminal. */
export function renderChange(c: ContractChange): string {
  return `${c.breaking ? "BREAKING" : "compatible"}: ${c.entry}${c.at === "" ? "" : ` at ${c.at}`}: ${c.message}`;
}

/** The lock of a package as it is now. */
export function buildLock(pkg: PackageModel): ContractLock {
  const jobs: Record<string, { hash: string; contract: JsonValue }> = {};
  for (const j of pkg.jobs) {
    const contract = jobContract(j, pkg);
    jobs[j.name] = { hash: contractHash(contract), contract };
  }
  const signals: Record<string, { hash: string; contract: JsonValue }> = {};
  for (const s of pkg.signals) {
    const contract = signalContract(s, pkg);
    signals[s.name] = { hash: contractHash(contract), contract };
  }
  if (pkg.workflows.length === 0) return { lockVersion: 1, package: pkg.name, jobs, signals };
  const workflows: Record<string, { hash: string; contract: JsonValue }> = {};
  for (const w of pkg.workflows) {
    const contract = workflowContract(w, pkg);
    workflows[w.name] = { hash: contractHash(contract), contract };
  }
  return { lockVersion: 1, package: pkg.name, jobs, signals, workflows };
}

/** The lock as committed text: canonical key order, two-space indentation, one trailing newline. */
export function renderLock(lock: ContractLock): string {
  return `${JSON.stringify(JSON.parse(canonicalJson(lock)), null, 2)}\n`;
}

/** Parses a committed lock; undefined when the text is not one. */
export function parseLock(text: string): ContractLock | undefined {
  try {
    const v = JSON.parse(text) as Partial<ContractLock>;
    return v.lockVersion === 1 && typeof v.jobs === "object" && typeof v.signals === "object" ? (v as ContractLock) : undefined;
  } catch {
    return undefined;
  }
}

type Direction = "accepts" | "produces";

function types(s: JsonSchema): Set<string> | undefined {
  const t = s["type"];
  if (typeof t === "string") return new Set(t === "integer" ? ["integer"] : [t]);
  if (Array.isArray(t)) return new Set(t as string[]);
  return undefined;
}

function props(s: JsonSchema): Record<string, JsonSchema> {
  return (s["properties"] ?? {}) as Record<string, JsonSchema>;
}

function required(s: JsonSchema): Set<string> {
  return new Set(Array.isArray(s["required"]) ? (s["required"] as string[]) : []);
}

const LOWER_BOUNDS = ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"];
const UPPER_BOUNDS = ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"];

/**
 * Compares two versions of a schema. `accepts`: the new schema must accept
 * every value the old one did. `produces`: every value the new one admits
 * must be acceptable to readers of the old one.
 */
function compareSchema(before: JsonSchema, after: JsonSchema, dir: Direction, at: string, out: (breaking: boolean, at: string, message: string) => void): void {
  if (canonicalJson(before) === canonicalJson(after)) return;
  // Widening is safe for inputs, narrowing for outputs.
  const narrowIsBreaking = dir === "accepts";
  for (const k of ["oneOf", "anyOf", "allOf", "$ref", "definitions"]) {
    if (canonicalJson(before[k] ?? null) !== canonicalJson(after[k] ?? null)) {
      out(true, at, `"${k}" changed; the classifier cannot judge it, so it counts as breaking`);
      return;
    }
  }
  const tb = types(before);
  const ta = types(after);
  if (tb !== undefined || ta !== undefined) {
    const lost = tb === undefined ? [] : [...tb].filter((t) => ta !== undefined && !ta.has(t) && !(t === "integer" && ta.has("number")));
    const gained = ta === undefined ? [] : [...ta].filter((t) => tb !== undefined && !tb.has(t) && !(t === "integer" && tb.has("number")));
    if (tb !== undefined && ta === undefined) gained.push("any type");
    if (tb === undefined && ta !== undefined) lost.push("any type");
    if (lost.length > 0) out(narrowIsBreaking, at, `no longer admits ${lost.join(", ")}`);
    if (gained.length > 0) out(!narrowIsBreaking, at, `now admits ${gained.join(", ")}`);
  }
  const eb = before["enum"] as JsonValue[] | undefined;
  const ea = after["enum"] as JsonValue[] | undefined;
  if (canonicalJson(eb ?? null) !== canonicalJson(ea ?? null)) {
    const has = (list: JsonValue[] | undefined, v: JsonValue) => list === undefined || list.some((x) => canonicalJson(x) === canonicalJson(v));
    const removed = (eb ?? []).filter((v) => !has(ea, v));
    const added = (ea ?? []).filter((v) => !has(eb, v));
    if (eb !== undefined && ea === undefined) out(!narrowIsBreaking, at, "no longer restricted to an enum");
    if (eb === undefined && ea !== undefined) out(narrowIsBreaking, at, "now restricted to an enum");
    if (removed.length > 0) out(narrowIsBreaking, at, `enum lost ${removed.map((v) => JSON.stringify(v)).join(", ")}`);
    if (added.length > 0) out(!narrowIsBreaking, at, `enum gained ${added.map((v) => JSON.stringify(v)).join(", ")}`);
  }
  if (canonicalJson(before["const"] ?? null) !== canonicalJson(after["const"] ?? null)) out(true, at, "its constant changed");
  for (const k of ["pattern", "format", "multipleOf", "uniqueItems"]) {
    const b = before[k];
    const a = after[k];
    if (canonicalJson(b ?? null) === canonicalJson(a ?? null)) continue;
    if (b === undefined) out(narrowIsBreaking, at, `gained "${k}"`);
    else if (a === undefined) out(!narrowIsBreaking, at, `lost "${k}"`);
    else out(true, at, `"${k}" changed`);
  }
  for (const [keys, tighter] of [
    [LOWER_BOUNDS, (b: number, a: number) => a > b],
    [UPPER_BOUNDS, (b: number, a: number) => a < b],
  ] as const) {
    for (const k of keys) {
      const b = before[k] as number | undefined;
      const a = after[k] as number | undefined;
      if (b === a) continue;
      const narrowed = b === undefined || (a !== undefined && tighter(b, a));
      out(
        narrowed ? narrowIsBreaking : !narrowIsBreaking,
        at,
        `"${k}" ${b === undefined ? `added (${a})` : a === undefined ? "removed" : `changed from ${b} to ${a}`}`,
      );
    }
  }
  // Object members.
  const pb = props(before);
  const pa = props(after);
  const rb = required(before);
  const ra = required(after);
  const closedBefore = before["additionalProperties"] === false;
  const closedAfter = after["additionalProperties"] === false;
  for (const name of [...new Set([...Object.keys(pb), ...Object.keys(pa)])].sort(compareCodeUnits)) {
    const where = at === "" ? name : `${at}.${name}`;
    const b = pb[name];
    const a = pa[name];
    if (b !== undefined && a === undefined) {
      // Old producers may still send it; readers may still expect it.
      out(dir === "accepts" ? closedAfter : true, where, dir === "accepts" ? "field removed" : "field removed from what old readers expect");
    } else if (b === undefined && a !== undefined) {
      if (dir === "accepts") out(ra.has(name), where, ra.has(name) ? "new required field" : "new optional field");
      else out(false, where, "new field");
    } else if (b !== undefined && a !== undefined) {
      if (!rb.has(name) && ra.has(name)) out(dir === "accepts", where, "became required");
      if (rb.has(name) && !ra.has(name)) out(dir === "produces", where, "became optional");
      compareSchema(b, a, dir, where, out);
    }
  }
  if (!closedBefore && closedAfter) out(narrowIsBreaking, at, "no longer admits undeclared fields");
  if (closedBefore && !closedAfter) out(!narrowIsBreaking, at, "now admits undeclared fields");
  const ib = before["items"] as JsonSchema | undefined;
  const ia = after["items"] as JsonSchema | undefined;
  if (ib !== undefined && ia !== undefined) compareSchema(ib, ia, dir, `${at}[]`, out);
  else if (canonicalJson(ib ?? null) !== canonicalJson(ia ?? null)) out(true, `${at}[]`, "items schema added or removed");
}

function field(contract: JsonValue, key: string): JsonValue {
  return (contract as { [k: string]: JsonValue })[key] ?? null;
}

/** Every change from `before` (the committed lock) to `after` (the spec now), breaking ones first. */
export function diffLocks(before: ContractLock, after: ContractLock): ContractChange[] {
  const changes: ContractChange[] = [];
  const section = (kind: "job" | "signal", b: ContractLock["jobs"], a: ContractLock["jobs"]) => {
    for (const name of [...new Set([...Object.keys(b), ...Object.keys(a)])].sort(compareCodeUnits)) {
      const entry = `${kind} "${name}"`;
      const old = b[name];
      const now = a[name];
      if (old === undefined) {
        changes.push({ breaking: false, entry, at: "", message: `new ${kind}` });
        continue;
      }
      if (now === undefined) {
        changes.push({ breaking: true, entry, at: "", message: `${kind} removed; producers or waiters of it remain` });
        continue;
      }
      if (old.hash === now.hash) continue;
      const add = (breaking: boolean, at: string, message: string) => changes.push({ breaking, entry, at, message });
      const parts: Array<[string, Direction]> =
        kind === "job"
          ? [
              ["input", "accepts"],
              ["output", "produces"],
              ["error", "produces"],
            ]
          : [
              ["params", "accepts"],
              ["payload", "accepts"],
            ];
      for (const [key, dir] of parts) {
        const sb = field(old.contract, key);
        const sa = field(now.contract, key);
        if (sb === null || sa === null) {
          if (sb !== sa) add(key === "error" ? sb !== null : true, key, sb === null ? `${key} added` : `${key} removed`);
          continue;
        }
        compareSchema(sb as JsonSchema, sa as JsonSchema, dir, key, add);
      }
      for (const key of kind === "job" ? ["idempotencyKey", "headers"] : ["key"]) {
        const vb = field(old.contract, key);
        const va = field(now.contract, key);
        if (canonicalJson(vb) === canonicalJson(va)) continue;
        if (key === "headers") compareHeaders(vb, va, add);
        else add(true, key, `changed from ${JSON.stringify(vb)} to ${JSON.stringify(va)}; keys built before and after no longer match`);
      }
    }
  };
  section("job", before.jobs, after.jobs);
  section("signal", before.signals, after.signals);
  diffWorkflows(before.workflows ?? {}, after.workflows ?? {}, changes);
  return changes.sort((x, y) => Number(y.breaking) - Number(x.breaking));
}

function compareHeaders(before: JsonValue, after: JsonValue, add: (breaking: boolean, at: string, message: string) => void): void {
  type H = { name: string; required: boolean; schema: JsonSchema };
  const b = new Map((before as unknown as H[]).map((h) => [h.name, h]));
  const a = new Map((after as unknown as H[]).map((h) => [h.name, h]));
  for (const name of [...new Set([...b.keys(), ...a.keys()])].sort(compareCodeUnits)) {
    const hb = b.get(name);
    const ha = a.get(name);
    const at = `headers.${name}`;
    if (hb === undefined && ha !== undefined) add(ha.required, at, ha.required ? "new required header" : "new optional header");
    else if (hb !== undefined && ha === undefined) add(true, at, "header removed; old producers still send it");
    else if (hb !== undefined && ha !== undefined) {
      if (!hb.required && ha.required) add(true, at, "became required");
      if (hb.required && !ha.required) add(false, at, "became optional");
      compareSchema(hb.schema, ha.schema, "accepts", at, add);
    }
  }
}

type StepContract = { name: string; payload: JsonSchema | null; waitsFor: string | null; waitsForChild?: string };

/**
 * Workflow changes. Runs in flight when new code starts carry step envelopes
 * written by the old code: a removed workflow or step, a step payload that no
 * longer accepts what was sent, or a wait moved to another signal breaks them.
 * The result and error are read by old clients (covariant); the input is sent
 * by old producers (contravariant). Changing the step graph otherwise is safe.
 */
function diffWorkflows(before: NonNullable<ContractLock["workflows"]>, after: NonNullable<ContractLock["workflows"]>, changes: ContractChange[]): void {
  for (const name of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort(compareCodeUnits)) {
    const entry = `workflow "${name}"`;
    const old = before[name];
    const now = after[name];
    const add = (breaking: boolean, at: string, message: string) => changes.push({ breaking, entry, at, message });
    if (old === undefined) add(false, "", "new workflow");
    else if (now === undefined) add(true, "", "workflow removed; runs of it in flight remain");
    else if (old.hash !== now.hash) {
      for (const [key, dir] of [
        ["input", "accepts"],
        ["result", "produces"],
        ["error", "produces"],
      ] as const) {
        const sb = field(old.contract, key);
        const sa = field(now.contract, key);
        if (sb === null || sa === null) {
          if (sb !== sa) add(key === "error" ? sb !== null : true, key, sb === null ? `${key} added` : `${key} removed`);
        } else compareSchema(sb as JsonSchema, sa as JsonSchema, dir, key, add);
      }
      if (canonicalJson(field(old.contract, "headers")) !== canonicalJson(field(now.contract, "headers"))) {
        compareHeaders(field(old.contract, "headers"), field(now.contract, "headers"), add);
      }
      const sb = new Map((field(old.contract, "steps") as unknown as StepContract[]).map((x) => [x.name, x]));
      const sa = new Map((field(now.contract, "steps") as unknown as StepContract[]).map((x) => [x.name, x]));
      for (const step of [...new Set([...sb.keys(), ...sa.keys()])].sort(compareCodeUnits)) {
        const b = sb.get(step);
        const a = sa.get(step);
        const at = `steps.${step}`;
        if (b === undefined) add(false, at, "new step");
        else if (a === undefined) add(true, at, "step removed; runs in flight may be about to enter it");
        else {
          if (b.waitsFor !== a.waitsFor)
            add(
              true,
              `${at}.waits_for`,
              `changed from ${JSON.stringify(b.waitsFor)} to ${JSON.stringify(a.waitsFor)}; runs waiting now were keyed by the old signal`,
            );
          if ((b.waitsForChild ?? null) !== (a.waitsForChild ?? null))
            add(
              true,
              `${at}.waits_for_child`,
              `changed from ${JSON.stringify(b.waitsForChild ?? null)} to ${JSON.stringify(a.waitsForChild ?? null)}; runs waiting now wait for a child of the old workflow`,
            );
          if (b.payload !== null && a.payload !== null) compareSchema(b.payload, a.payload, "accepts", `${at}.payload`, add);
          else if (canonicalJson(b.payload) !== canonicalJson(a.payload)) add(true, `${at}.payload`, "payload added or removed");
        }
      }
    }
  }
}
