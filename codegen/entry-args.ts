/**
 * @module The arguments of `taquba/codegen`'s exported functions, checked
 * once where a caller hands them over: a wrong kind of value, a revoked
 * Proxy, a getter that throws or an array with holes is a `ValidationError`
 * naming the function and argument, never a TypeError from deep inside, and
 * a string passed where an array belongs is refused before it is spread
 * into ten million characters.
 */
import { TaqubaError, ValidationError } from "../runtime/errors.js";
import {
  cutText,
  describeValue,
  errorText,
  hasMethods,
  isInstance,
  isOptionArray,
  isOptionObject,
  readOptionArray,
  readOptions,
} from "../runtime/option-values.js";
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

/** Deepest nesting of a JSON value accepted; a contract or a schema is a few levels deep. */
const MAX_JSON_DEPTH = 1000;
/** Most arrays, objects and scalars one JSON value may hold, counting a shared one each time it is met (as JSON.stringify writes it); a spec holds at most as many. */
const MAX_JSON_NODES = 200_000;

/**
 * A copy of the JSON value `v`, each field read once (what is checked is
 * what is used); throws a `ValidationError` naming the path of the first
 * value JSON cannot hold: NaN, Infinity, a bigint, a symbol, a function or
 * undefined (JSON.stringify would write null or nothing, a silently
 * different hash or schema), an object that is not a plain one (a Date, a
 * Map: JSON writes it as something else or as nothing), a cycle, nesting
 * past 1000 levels, or more than 200,000 values (an object shared by
 * both fields of its parent, 40 levels deep, is 2^40 values once written
 * out) are refused before they exhaust the stack or the CPU.
 */
export function argJson(at: string, v: unknown): unknown {
  return copyJson(at, v, { depth: 0, nodes: 0, open: new Set() });
}

/** Throws unless `v` is a JSON Schema: a JSON object (see `argJson`); returns the copy. */
export function argSchema(at: string, v: unknown): object {
  argObject(at, v, "a JSON Schema object");
  return argJson(at, v) as object;
}

interface JsonWalk {
  depth: number;
  nodes: number;
  /** The objects and arrays on the path to the value being read: meeting one again is a cycle. */
  open: Set<object>;
}

const shownPath = (at: string) => (at.length > 100 ? `${at.slice(0, 100)}...` : at);

function copyJson(at: string, v: unknown, walk: JsonWalk): unknown {
  if (++walk.nodes > MAX_JSON_NODES)
    throw new ValidationError(
      `${shownPath(at)} is past the ${MAX_JSON_NODES.toLocaleString("en-US")}th value of a JSON value (an object shared by several fields counts each time); a contract or schema is far smaller`,
    );
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") {
    if (Number.isFinite(v)) return v;
    throw new ValidationError(`${at} must be a JSON value, got ${describeValue(v)}`);
  }
  if (typeof v !== "object") throw new ValidationError(`${at} must be a JSON value, got ${describeValue(v)}`);
  if (walk.open.has(v)) throw new ValidationError(`${shownPath(at)} refers to an object that contains it (a cycle); a JSON value cannot`);
  if (walk.depth >= MAX_JSON_DEPTH)
    throw new ValidationError(`${shownPath(at)} is nested more than ${MAX_JSON_DEPTH} levels deep; a contract or schema is a JSON value a few levels deep`);
  const array = isOptionArray(v);
  if (!array && !isPlainObject(v)) throw new ValidationError(`${at} must be a JSON value (a plain object, an array or a scalar), got ${describeShape(v)}`);
  walk.open.add(v);
  walk.depth++;
  try {
    if (array) return readOptionArray(at, v, "a JSON array", MAX_ENTRIES).map((e, i) => copyJson(`${at}[${i}]`, e, walk));
    const fields = readOptions(v, ownKeys(at, v), at);
    const out: Record<string, unknown> = {};
    for (const [k, e] of Object.entries(fields)) out[k] = copyJson(`${at}.${k}`, e, walk);
    return out;
  } finally {
    walk.depth--;
    walk.open.delete(v);
  }
}

/** Whether `v`'s prototype is Object.prototype or null (a Proxy whose prototype cannot be read is not). */
function isPlainObject(v: object): boolean {
  try {
    const proto = Object.getPrototypeOf(v);
    return proto === Object.prototype || proto === null;
  } catch {
    return false;
  }
}

/** What kind of object `v` is, for a message: its constructor's name when it has one. */
function describeShape(v: object): string {
  try {
    const name = (Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    if (typeof name === "string" && name !== "") return `an instance of ${cutText(name, 64)}`;
  } catch {
    // A Proxy that throws at its prototype: said below.
  }
  return describeValue(v);
}

/** The enumerable own string keys of `v`, at most MAX_ENTRIES; a Proxy that throws when asked is a `ValidationError`. */
function ownKeys(at: string, v: object): string[] {
  let keys: string[];
  try {
    keys = Object.keys(v);
  } catch (err) {
    throw new ValidationError(`reading the fields of ${shownPath(at)} threw: ${errorText(err)}`);
  }
  if (keys.length > MAX_ENTRIES) throw new ValidationError(`${shownPath(at)} must be a JSON object of at most ${MAX_ENTRIES} fields, got ${keys.length}`);
  return keys;
}
