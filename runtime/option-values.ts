/**
 * @module Option objects as callers hand them over: each field read once
 * (a getter or a Proxy answering differently on a second read cannot slip
 * past a check), and values shown in error messages for what they are.
 */
import { types } from "node:util";
import { ValidationError } from "./errors.js";
import { appendOwn } from "./own-fields.js";

/** Characters of a string a message shows; a longer one (a 100 KB key) is cut, so the message stays readable. */
const SHOWN_CHARS = 64;

/**
 * A refused name, key or id as a message shows it: a string quoted (cut
 * past 64 characters), anything else as `describeValue` says (JSON cannot
 * show a bigint or a revoked Proxy). Where the value should be a string.
 */
export function quoteValue(v: unknown): string {
  if (typeof v !== "string") return describeValue(v);
  // An escaped lone surrogate stays visible rather than turning into U+FFFD.
  return JSON.stringify(v.length > SHOWN_CHARS ? `${v.slice(0, codePointCut(v, SHOWN_CHARS))}...` : v);
}

/** A value as an error message shows it: what it is, not only how `String` spells it ("100" and 100 differ). */
export function describeValue(v: unknown): string {
  if (typeof v === "string") return `${quoteValue(v)} (a string)`;
  if (typeof v === "bigint") return `${v}n (a bigint)`;
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : String(v);
  if (typeof v === "function") return "a function";
  if (typeof v === "symbol") return "a symbol";
  if (v === null || typeof v !== "object") return String(v);
  try {
    return Array.isArray(v) ? "an array" : "an object";
  } catch {
    // Array.isArray throws for a revoked Proxy and nothing else.
    return "a revoked Proxy";
  }
}

/** Whether `v` is an object that is not an array: a revoked Proxy, which throws at any question, is not. */
export function isOptionObject(v: unknown): v is object {
  if (v === null || typeof v !== "object") return false;
  try {
    return !Array.isArray(v);
  } catch {
    return false;
  }
}

/** Whether `v` is an object no question can be asked of (a revoked Proxy): every read of it throws a TypeError. */
export function isUnreadableObject(v: unknown): boolean {
  return v !== null && typeof v === "object" && !isOptionObject(v) && !isOptionArray(v);
}

/** `Array.isArray`, false for a revoked Proxy (which throws at it). */
export function isOptionArray(v: unknown): v is unknown[] {
  try {
    return Array.isArray(v);
  } catch {
    return false;
  }
}

/** `v instanceof cls`, false for a revoked Proxy (which throws at it). */
export function isInstance<T>(v: unknown, cls: abstract new (...args: never[]) => T): v is T {
  try {
    return v instanceof cls;
  } catch {
    return false;
  }
}

/** `v instanceof Uint8Array`, false for a revoked Proxy (which throws at it). */
export function isOptionBytes(v: unknown): v is Uint8Array {
  return isInstance(v, Uint8Array);
}

/**
 * A copy of the array option `v` at `path` (`what` says what it must hold),
 * its length and each entry read once: a Proxy or getter that throws is a
 * `ValidationError` naming `path[i]`, and a length past `max` (a Proxy can
 * claim 2^32 - 1) is refused before anything is read.
 */
export function readOptionArray(path: string, v: unknown, what: string, max: number): unknown[] {
  if (!isOptionArray(v)) throw new ValidationError(`${path} must be ${what}, got ${describeValue(v)}`);
  let n: unknown;
  try {
    n = v.length;
  } catch (err) {
    throw new ValidationError(`reading ${path}.length threw: ${errorText(err)}`);
  }
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0 || n > max)
    throw new ValidationError(`${path} must be ${what} of at most ${max} entries, got ${typeof n === "number" ? n : describeValue(n)} entries`);
  const out: unknown[] = [];
  for (let i = 0; i < n; i++) {
    try {
      // Defined, not pushed: a setter of a prototype named as the index would take the element from the copy.
      appendOwn(out, v[i]);
    } catch (err) {
      throw new ValidationError(`reading ${path}[${i}] threw: ${errorText(err)}`);
    }
  }
  return out;
}

/**
 * What a caller's thrown value says, for a message; never throws itself (an
 * object without a prototype has no text, an error's message may be a getter
 * that throws, a revoked Proxy throws at `instanceof`).
 */
export function errorText(err: unknown): string {
  let text: string;
  try {
    text = err instanceof Error ? String(err.message) : String(err);
  } catch {
    return "a value that cannot be shown as text";
  }
  // A caller's message goes into ours whole only when short: a thrown 10 MB string would make ours 10 MB.
  return cutText(text, MAX_ERROR_TEXT);
}

/** Most characters of a caller's error message that `errorText` shows. */
const MAX_ERROR_TEXT = 1000;

/**
 * `s` cut to its first `max` characters (never between the two halves of a
 * surrogate pair), followed by a marker giving the original length, so a
 * reader knows the text is incomplete and by how much.
 */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return showLoneSurrogates(s);
  const end = codePointCut(s, max);
  return `${showLoneSurrogates(s.slice(0, end))}… [cut: first ${end} of ${s.length} characters kept]`;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `s` with each lone surrogate written as its escape (`\ud800`, six
 * characters). UTF-8 cannot hold one: stored as it is, an error text a
 * caller threw would come back with U+FFFD in its place and no sign of it.
 */
export function showLoneSurrogates(s: string): string {
  if ((s as string & { isWellFormed(): boolean }).isWellFormed()) return s;
  return s.replace(LONE_SURROGATE, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/**
 * Where to cut `s` to keep at most its first `end` characters: `end`, or
 * one less when that would split a surrogate pair (an emoji), whose half
 * left alone UTF-8 cannot hold.
 */
export function codePointCut(s: string, end: number): number {
  // NaN and negative bounds keep nothing; a fractional one keeps the whole characters below it.
  if (!(end > 0)) return 0;
  if (end >= s.length) return s.length;
  end = Math.floor(end);
  const high = s.charCodeAt(end - 1);
  const low = s.charCodeAt(end);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? end - 1 : end;
}

/**
 * Reads each named field of `from` once into a copy (see `blankCopy`): a
 * getter or a Proxy is asked once, so what is checked is what is used, and
 * one that throws becomes a problem naming the field instead of escaping.
 * A field `from` only inherits from `Object.prototype` or
 * `Function.prototype` is left out (see `isBaseField`); one whose origin
 * cannot be told (a Proxy trap throws while asked) is a problem as well,
 * never taken as absent.
 */
export function readFields<K extends string>(from: object, keys: readonly K[], path: string, problems: string[]): Partial<Record<K, unknown>> {
  const out = blankCopy<Partial<Record<K, unknown>>>();
  for (const k of keys) {
    let v: unknown;
    try {
      // Asked before the read, so a getter set on Object.prototype never runs; for a name no base
      // prototype holds (the common case) it is one lookup that asks nothing of `from`.
      if (isBaseField(from, k)) continue;
      v = (from as Record<string, unknown>)[k];
    } catch (err) {
      problems.push(`reading ${path}${k} threw: ${errorText(err)}`);
      continue;
    }
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * Whether `from[k]` finds its value on `Object.prototype` or
 * `Function.prototype` rather than on `from` or a prototype below them
 * (`Object.create(defaults)`, a class's getter): a field there is set for
 * every object of the process (a library that merged a parsed
 * `{"__proto__": ...}` into one), so it is not the caller's option. Asks
 * nothing of `from` unless one of those holds `k`.
 */
export function isBaseField(from: object, k: string): boolean {
  if (!(k in Function.prototype)) return false;
  let o: object | null = from;
  let proxied = false;
  for (let depth = 0; o !== null; depth++) {
    if (depth === MAX_PROTOTYPE_DEPTH) throw new Error(`its prototype chain is over ${MAX_PROTOTYPE_DEPTH} objects long`);
    // Reaching a base prototype that does not hold `k` (an object's chain has no `Function.prototype`,
    // whose `name` and `length` are its own), the value came from above it: a Proxy's answer.
    if (o === Object.prototype) return Object.hasOwn(o, k) && (!proxied || answersAsBase(from, o, k));
    if (o === Function.prototype) return k in o && (!proxied || answersAsBase(from, o, k));
    if (Object.hasOwn(o, k)) return false;
    proxied ||= types.isProxy(o);
    o = Object.getPrototypeOf(o) as object | null;
  }
  return false;
}

/**
 * For a chain through a Proxy that does not own `k` but may answer it from
 * its `get` trap: whether its answer is the base prototype's own value
 * (then it is the base's field). A getter there is taken as the base's
 * without being run; a Proxy that answers exactly the value set on the base
 * prototype cannot be told from one that forwards to it.
 */
function answersAsBase(from: object, base: object, k: string): boolean {
  const d = Object.getOwnPropertyDescriptor(base, k);
  return d === undefined || !("value" in d) || Object.is((from as Record<string, unknown>)[k], d.value);
}

/**
 * `from[k]`, or undefined when that field is one `from` inherits from
 * `Object.prototype` or `Function.prototype` (see `isBaseField`), whose
 * getter then does not run. For a reader that names its fields one by one;
 * a getter or Proxy trap that throws, while read or while asked where the
 * field comes from, is a `ValidationError` naming the field as `path`.
 */
export function callerField(from: object, k: string, path: string): unknown {
  try {
    return isBaseField(from, k) ? undefined : (from as Record<string, unknown>)[k];
  } catch (err) {
    throw new ValidationError(`reading ${path} threw: ${errorText(err)}`);
  }
}

/**
 * A prototype for copies of a caller's fields that inherits nothing: an
 * option left out reads as undefined even when `Object.prototype` has a
 * field of that name. A class rather than `Object.create(null)`, whose
 * objects V8 keeps as slow dictionaries.
 */
class BlankCopy {}
Object.setPrototypeOf(BlankCopy.prototype, null);

/** Options left out, for a reader to read fields of: empty and inheriting nothing (see `BlankCopy`). */
export const NO_OPTIONS: Readonly<Record<string, never>> = Object.freeze(new BlankCopy() as Record<string, never>);

/** A fresh, empty copy object (see `BlankCopy`). */
export function blankCopy<T extends object>(): T {
  return new BlankCopy() as T;
}

/**
 * Adds a problem for each field of `from` (see `optionFieldNames`) that is
 * not one of `keys`: a misspelt option would otherwise be dropped without a
 * word and its default used. Named as `{path}{key}`, with the keys taken.
 */
export function checkKnownFields(from: object, keys: readonly string[], path: string, problems: string[]): void {
  const known = knownSetOf(keys);
  let own: string[];
  try {
    own = optionFieldNames(from);
  } catch (err) {
    problems.push(`listing the fields of ${path.replace(/\.$/, "") || "the options"} threw: ${errorText(err)}`);
    return;
  }
  let unknown = 0;
  for (const k of own) {
    if (known.has(k)) continue;
    if (++unknown > MAX_UNKNOWN_NAMED) continue;
    const near = closestName(k, keys);
    problems.push(
      `${path}${quoteKey(k)} is not an option (misspelt?); the options are ${keys.join(", ")}${near === undefined ? "" : `; did you mean ${near}?`}`,
    );
  }
  if (unknown > MAX_UNKNOWN_NAMED)
    problems.push(
      `${unknown - MAX_UNKNOWN_NAMED} more fields of ${path === "" ? "the options" : path.slice(0, -1)} are not options either (${unknown} in all)`,
    );
}

/** Each field list's names as a set, made once per list (a submission checks its options on every call). */
const knownSets = new WeakMap<readonly string[], ReadonlySet<string>>();

function knownSetOf(keys: readonly string[]): ReadonlySet<string> {
  let set = knownSets.get(keys);
  if (set === undefined) {
    set = new Set(keys);
    knownSets.set(keys, set);
  }
  return set;
}

/** Most prototypes above an option object whose fields count as its own: a Proxy can make the chain endless. */
const MAX_PROTOTYPE_DEPTH = 32;

/**
 * The fields an option object holds, as every reader checks them: its own
 * enumerable string keys and those it inherits (`Object.create(defaults)`,
 * a class instance's), since a reader's `o.field` sees both; not those of
 * `Object.prototype` or `Function.prototype` (every object inherits them:
 * a field added there is not the caller's, see `isBaseField`), nor those
 * of `BlankCopy.prototype` (a reader's own copy), and not symbols or non-enumerable properties (no option
 * is either). A key `__proto__` made by `JSON.parse` is a field like any
 * other. Reads no field, so no getter runs.
 */
export function optionFieldNames(from: object): string[] {
  const names = Object.keys(from);
  let proto = Object.getPrototypeOf(from) as object | null;
  if (proto === null || isBasePrototype(proto)) return names;
  const seen = new Set(names);
  for (let depth = 0; proto !== null && !isBasePrototype(proto); depth++) {
    if (depth === MAX_PROTOTYPE_DEPTH) throw new Error(`its prototype chain is over ${MAX_PROTOTYPE_DEPTH} objects long`);
    for (const k of Object.keys(proto)) {
      if (seen.has(k)) continue;
      seen.add(k);
      names.push(k);
    }
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return names;
}

/** Whether `proto` is where every object's inherited fields come from, or a reader's copy's (which has none of its own). */
function isBasePrototype(proto: object): boolean {
  return proto === Object.prototype || proto === Function.prototype || proto === BlankCopy.prototype;
}

/**
 * Most fields that are no option a refusal names one by one: an object
 * spread from a large configuration (100,000 fields) made a message of
 * some 29 MB, each line listing the options again.
 */
const MAX_UNKNOWN_NAMED = 10;

/**
 * `checkKnownFields` as a throw: `ValidationError` saying `what` has a field
 * that is no option, one issue per such field, when `from` has any. For an
 * option object whose fields are read where they are used.
 */
export function refuseUnknownFields(from: object, keys: readonly string[], path: string, what: string): void {
  const refusal = unknownFieldsRefusal(from, keys, path, what);
  if (refusal !== undefined) throw refusal;
}

/** The `ValidationError` `refuseUnknownFields` throws, or undefined: for an entry point that must reject rather than throw. */
export function unknownFieldsRefusal(from: object, keys: readonly string[], path: string, what: string): ValidationError | undefined {
  const problems: string[] = [];
  checkKnownFields(from, keys, path, problems);
  return problems.length > 0 ? new ValidationError(`${what} has a field that is not an option`, problems) : undefined;
}

/** Longest name compared for a suggestion: a longer one (a 100 KB key) is no typo of an option. */
const MAX_SUGGESTED_NAME = 64;

/**
 * The one of `names` a typo `k` most likely meant: equal but for case, or
 * within two edits (one for names under five characters); none when two are
 * as close.
 */
function closestName(k: string, names: readonly string[]): string | undefined {
  if (k.length > MAX_SUGGESTED_NAME) return undefined;
  const lower = k.toLowerCase();
  const sameButCase = names.filter((n) => n.toLowerCase() === lower);
  if (sameButCase.length === 1) return sameButCase[0];
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  let tied = false;
  for (const n of names) {
    const d = editDistance(lower, n.toLowerCase());
    if (d < bestDistance) [best, bestDistance, tied] = [n, d, false];
    else if (d === bestDistance) tied = true;
  }
  const allowed = Math.min(k.length, best?.length ?? 0) < 5 ? 1 : 2;
  return bestDistance <= allowed && !tied ? best : undefined;
}

/** Edits (insert, delete, replace, swap of neighbours) turning `a` into `b`. */
function editDistance(a: string, b: string): number {
  let before = Array.from({ length: b.length + 1 }, () => 0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
    }
    [before, prev] = [prev, row];
  }
  return prev[b.length]!;
}

/** A field name as a message shows it: bare when it is a plain name, quoted otherwise (an empty or odd key stays visible). */
function quoteKey(k: string): string {
  return /^[A-Za-z_$][\w$]{0,63}$/.test(k) ? k : quoteValue(k);
}

/**
 * The options object `given` of an entry point, each of `keys` read once
 * (see `readFields`): throws `ValidationError` when it is not an object or
 * a field cannot be read, naming the field as `{name}.{field}` (and the
 * object as `what`, by default `name`). Check and use the returned copy,
 * never `given`.
 */
export function readOptions<K extends string>(given: unknown, keys: readonly K[], name: string, what = name): Partial<Record<K, unknown>> {
  if (!isOptionObject(given)) throw new ValidationError(`${what} must be an object, got ${describeValue(given)}`);
  const problems: string[] = [];
  const out = readFields(given, keys, `${name}.`, problems);
  if (problems.length > 0) throw new ValidationError(`${name} could not be read`, problems);
  return out;
}

/**
 * The field names of the option type `T`, from an object literal naming
 * each once (`optionFields<RunOptions>({ headers: true, ... })`): a field of
 * `T` left out, or a name that is none of its fields, fails to compile, so
 * the list an entry point checks cannot fall behind its type (a new option
 * left out would be refused as misspelt).
 */
export function optionFields<T>(fields: { readonly [K in keyof T]-?: true }): readonly Extract<keyof T, string>[] {
  return Object.freeze(Object.keys(fields)) as readonly Extract<keyof T, string>[];
}

/**
 * `readOptions`, refusing a field that is not one of `keys` as well, so a
 * misspelt option is an error instead of a default used in silence.
 */
export function readExactOptions<K extends string>(given: unknown, keys: readonly K[], name: string, what = name): Partial<Record<K, unknown>> {
  const out = readOptions(given, keys, name, what);
  refuseUnknownFields(given as object, keys, `${name}.`, what);
  return out;
}

/** Throws `ValidationError` naming `path` unless `v` is absent or a string. */
export function checkOptionalString(path: string, v: unknown): asserts v is string | undefined {
  if (v !== undefined && typeof v !== "string") throw new ValidationError(`${path} must be a string, got ${describeValue(v)}`);
}

/** Throws `ValidationError` naming `path` unless `v` is absent or a function. */
export function checkOptionalFunction(path: string, v: unknown): void {
  if (v !== undefined && typeof v !== "function") throw new ValidationError(`${path} must be a function, got ${describeValue(v)}`);
}

/**
 * Whether `v` is an object whose `methods` are all functions (reading them
 * may not throw): a clock, a logger, a store. A method counts when `v` or a
 * prototype below `Object.prototype` and `Function.prototype` holds it (a
 * class's method does): one found only there (`Object.prototype.now = ...`,
 * or its own `toString`) would make any object pass, and is not read.
 */
export function hasMethods(v: unknown, methods: readonly string[]): boolean {
  if (v === null || (typeof v !== "object" && typeof v !== "function")) return false;
  try {
    return methods.every((m) => !isBaseField(v, m) && typeof (v as Record<string, unknown>)[m] === "function");
  } catch {
    return false;
  }
}

/** Throws `ValidationError` naming `path` unless `v` is absent or a finite number of milliseconds in `min..max`. */
export function checkOptionalMs(path: string, v: unknown, min: number, max: number): asserts v is number | undefined {
  if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max))
    throw new ValidationError(`${path} must be a number of ms in ${min}..${max}, got ${describeValue(v)}`);
}

/**
 * Runs `call`, code a caller gave (a listener, a handler, a logger's
 * method), from where its failure has nowhere to go: a throw, or a returned
 * promise's rejection (left unhandled, it would end the process), goes to
 * `failed` instead. Should `failed` throw too (it reports a value the caller
 * made, which may fail to show), that is dropped: thrown from the rejection
 * handler it would reject unhandled, and thrown here it would reach the
 * background work that called.
 */
export function callGuarded(call: () => unknown, failed: (err: unknown) => void): void {
  const report = (err: unknown): void => {
    try {
      failed(err);
    } catch {
      // Nowhere left to report it.
    }
  };
  let r: unknown;
  try {
    r = call();
  } catch (err) {
    report(err);
    return;
  }
  if (r === null || (typeof r !== "object" && typeof r !== "function")) return;
  try {
    const then = (r as { then?: unknown }).then;
    if (typeof then === "function") then.call(r, undefined, report);
  } catch (err) {
    report(err);
  }
}

/**
 * Header `name` of `headers` when the headers hold it themselves, else
 * undefined: a job's headers are a plain object, and a name set on
 * `Object.prototype` (a reserved `workflow.` name included) is no header of
 * it.
 */
export function ownHeader(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  return Object.hasOwn(headers, name) ? headers[name] : undefined;
}
