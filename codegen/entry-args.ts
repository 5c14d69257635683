/**
 * @module The arguments of `taquba/codegen`'s exported functions, checked
 * once where a caller hands them over: a wrong kind of value, a revoked
 * Proxy, a getter that throws or an array with holes is a `ValidationError`
 * naming the function and argument, never a TypeError from deep inside, and
 * a string passed where an array belongs is refused before it is spread
 * into ten million characters.
 */
import { TaqubaError, ValidationError } from "../runtime/errors.js";
import { describeValue, errorText, hasMethods, isInstance, isOptionArray, isOptionObject, readOptionArray, readOptions } from "../runtime/option-values.js";
import { isWellFormed } from "../runtime/store/keys.js";

/** Longest spec file path or import path accepted; real ones are far shorter. */
const MAX_PATH_CHARS = 4096;
/** Most entries of an array argument: spec files of one generation, diagnostics, roots, CLI arguments. */
const MAX_ENTRIES = 100_000;

/** Throws unless `v` is a non-empty, well-formed path of at most 4096 characters (a lone surrogate would name another file on disk). */
export function argPath(at: string, v: unknown): string {
  if (typeof v !== "string" || v.length === 0 || v.length > MAX_PATH_CHARS || !isWellFormed(v))
    throw new ValidationError(`${at} must be a file path (a non-empty string of at most ${MAX_PATH_CHARS} characters), got ${describeValue(v)}`);
  return v;
}

/** Throws unless `v` is a string (absent allowed when `optional`). */
export function argText(at: string, v: unknown, optional = false): string | undefined {
  if ((v === undefined && optional) || typeof v === "string") return v as string | undefined;
  throw new ValidationError(`${at} must be a string, got ${describeValue(v)}`);
}

/** Throws unless `v` is an object (not an array, not a revoked Proxy). */
export function argObject(at: string, v: unknown, what: string): object {
  if (!isOptionObject(v)) throw new ValidationError(`${at} must be ${what}, got ${describeValue(v)}`);
  return v;
}

/** A copy of the array `v`, each entry read once; holes, throwing reads and a string are refused. */
export function argArray(at: string, v: unknown, what: string): unknown[] {
  const out = readOptionArray(at, v, `an array of ${what}`, MAX_ENTRIES);
  for (const [i, e] of out.entries()) if (e === undefined || e === null) throw new ValidationError(`${at}[${i}] must be ${what}, got ${describeValue(e)}`);
  return out;
}

/** The spec inputs of a generation, copied: each `{ file, source }` read once. */
export function argSpecInputs(at: string, v: unknown): { file: string; source: string }[] {
  return argArray(at, v, "spec inputs ({ file, source })").map((e, i) => {
    const o = readOptions(e, ["file", "source"], `${at}[${i}]`);
    return { file: argPath(`${at}[${i}].file`, o.file), source: argText(`${at}[${i}].source`, o.source) as string };
  });
}

/** Throws unless `v` is absent or an object with all of `methods`. */
export function argMethods(at: string, v: unknown, methods: readonly string[], optional = false): void {
  if (v === undefined && optional) return;
  if (!hasMethods(v, methods)) throw new ValidationError(`${at} must be an object with ${methods.join(" and ")} methods, got ${describeValue(v)}`);
}

/** Throws unless `v` is absent or an instance of `cls` (false, not a throw, for a revoked Proxy). */
export function argInstance<T>(at: string, v: unknown, cls: abstract new (...args: never[]) => T, what: string, optional = false): T | undefined {
  if (v === undefined && optional) return undefined;
  if (!isInstance(v, cls)) throw new ValidationError(`${at} must be ${what}, got ${describeValue(v)}`);
  return v;
}

/**
 * Runs `body` with checked arguments: a value that passed the checks at the
 * top but is malformed deeper (a hand-built model missing a field, a schema
 * holding a bigint) surfaces as a `ValidationError` naming `fn`, not as the
 * TypeError it raised inside.
 */
export function entryCall<R>(fn: string, body: () => R): R {
  try {
    const r = body();
    if (r instanceof Promise) return r.catch((err: unknown) => rethrow(fn, err)) as R;
    return r;
  } catch (err) {
    return rethrow(fn, err);
  }
}

function rethrow(fn: string, err: unknown): never {
  if (err instanceof TaqubaError) throw err;
  const refused = new ValidationError(
    `${fn} failed on what it was given (${errorText(err)}); pass what loadSpec, analyse or generate built from your spec files, not a hand-made or changed copy (if you did, this is a bug of the generator: report it with this error's cause)`,
  );
  // The original stays reachable: a bug of the generator itself must still be traceable.
  refused.cause = err;
  throw refused;
}

/** Deepest nesting of a JSON value accepted; a contract is a few levels deep. */
const MAX_JSON_DEPTH = 1000;

/**
 * Throws unless `v` is a JSON value: NaN, Infinity, a bigint, a symbol, a
 * function or undefined have no JSON form (JSON.stringify would write null
 * or nothing, a silently different hash), and nesting past 1000 levels or a
 * cycle is refused before it exhausts the stack.
 */
export function argJson(at: string, v: unknown, depth = 0): void {
  if (v === null || typeof v === "string" || typeof v === "boolean") return;
  if (typeof v === "number") {
    if (Number.isFinite(v)) return;
    throw new ValidationError(`${at} must be a JSON value, got ${describeValue(v)}`);
  }
  if (typeof v !== "object") throw new ValidationError(`${at} must be a JSON value, got ${describeValue(v)}`);
  if (depth >= MAX_JSON_DEPTH)
    throw new ValidationError(
      `${at.length > 100 ? `${at.slice(0, 100)}...` : at} is nested more than ${MAX_JSON_DEPTH} levels deep (or refers to itself); a contract is a JSON value a few levels deep`,
    );
  if (isOptionArray(v)) {
    const entries = readOptionArray(at, v, "a JSON array", MAX_ENTRIES);
    for (const [i, e] of entries.entries()) argJson(`${at}[${i}]`, e, depth + 1);
    return;
  }
  if (!isOptionObject(v)) throw new ValidationError(`${at} must be a JSON value, got ${describeValue(v)}`);
  const fields = readOptions(v, Object.keys(v), at);
  for (const [k, e] of Object.entries(fields)) argJson(`${at}.${k}`, e, depth + 1);
}
