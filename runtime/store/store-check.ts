/**
 * @module The check a store wrapper makes of the store it wraps, when made,
 * and the same check of a store argument of an entry point: a value that
 * would fail at its first request is refused at once with a
 * `ValidationError` naming the method, instead of a TypeError later or, at
 * an open, a `StoreUnavailableError` after retries that blames the store's
 * reachability.
 *
 * Each method is read once, in a guard: a Proxy whose trap throws, or a
 * method that is not a function, is named. Any object whose methods are
 * functions is accepted (a Proxy that forwards them, a wrapper, a
 * subclass), except one whose method is a built-in store's own read off
 * the store (a Proxy over it without a trap that binds, an object made
 * with `Object.create(store)`): called on the wrapper it cannot reach the
 * store's private state (see `own-state`). An optional method
 * (getBorrowed, getRange, getRangeInto, removeLeftovers) is either left
 * out or a function: callers test it against `undefined`, so a `null` or
 * other value there would fail every read through it instead.
 */
import { ValidationError } from "../errors.js";
import { describeValue, hasMethods, isBaseField } from "../option-values.js";
import { builtInMethodOffItsStore } from "./own-state.js";

const REQUIRED_METHODS = ["get", "put", "list", "delete"] as const;
const OPTIONAL_METHODS = ["getBorrowed", "getRange", "getRangeInto", "removeLeftovers"] as const;
/** What to pass, said in each refusal. */
const WHAT_TO_PASS = "pass an ObjectStore (a MemoryStore, a LocalStore, a store from openStore) or a wrapper whose methods call it";

/** Throws `ValidationError` naming `wrapper` unless `store` has get, put, list and delete methods, and each optional method is a function or left out. */
export function checkStore(wrapper: string, store: unknown): void {
  if (!hasMethods(store, REQUIRED_METHODS)) throw new ValidationError(`${wrapper} wraps an ObjectStore (get, put, list, delete), got ${describeStore(store)}`);
  checkMethods(`the store ${wrapper} wraps`, store as object);
}

/** Throws `ValidationError` naming `at` (the argument, as "Engine.open's store") unless `store` has get, put, list and delete methods, and each optional method is a function or left out. */
export function checkStoreArg(at: string, store: unknown): void {
  if (!hasMethods(store, REQUIRED_METHODS))
    throw new ValidationError(`${at} must be an ObjectStore (with get, put, list and delete methods), got ${describeStore(store)}`);
  checkMethods(at, store as object);
}

/**
 * What `store` is, and when it has the four methods' names but a read of
 * one throws or finds no function, which one: `hasMethods` says only no.
 */
function describeStore(store: unknown): string {
  const found = describeValue(store);
  if (store === null || (typeof store !== "object" && typeof store !== "function") || found === "a revoked Proxy") return found;
  for (const name of REQUIRED_METHODS) {
    let value: unknown;
    try {
      if (isBaseField(store, name)) return `${found} whose ${name} is a field every object inherits; ${WHAT_TO_PASS}`;
      value = (store as Record<string, unknown>)[name];
    } catch (err) {
      return `${found} that threw when its method ${name} was read (${errorText(err)}); ${WHAT_TO_PASS}`;
    }
    if (value === undefined) return `${found} without a ${name} method; ${WHAT_TO_PASS}`;
    if (typeof value !== "function") return `${found} whose ${name} is ${describeValue(value)}, not a function; ${WHAT_TO_PASS}`;
  }
  return found;
}

/** The required methods as a built-in store's own (read once more: `hasMethods` read them), then the optional ones. */
function checkMethods(at: string, store: object): void {
  for (const name of REQUIRED_METHODS) checkNotOffItsStore(at, store, name, readMethod(at, store, name, "method"));
  for (const name of OPTIONAL_METHODS) {
    const value = readMethod(at, store, name, "optional method");
    if (value !== undefined && typeof value !== "function")
      throw new ValidationError(`${at} has ${name} set to ${describeValue(value)}; an optional store method must be a function or left out (not null)`);
    checkNotOffItsStore(at, store, name, value);
  }
}

function readMethod(at: string, store: object, name: string, what: string): unknown {
  try {
    return (store as Record<string, unknown>)[name];
  } catch (err) {
    throw new ValidationError(
      `${at} threw when its ${what} ${name} was read (${errorText(err)}); ${what === "method" ? WHAT_TO_PASS : "leave the method out or make it readable"}`,
    );
  }
}

function checkNotOffItsStore(at: string, store: object, name: string, method: unknown): void {
  const builtIn = builtInMethodOffItsStore(method, store);
  if (builtIn === undefined) return;
  throw new ValidationError(
    `${at} is a Proxy or wrapper around a ${builtIn} whose ${name} is the ${builtIn}'s own method, which would run on the wrapper: ` +
      `a ${builtIn}'s methods work only on the ${builtIn} itself. Pass the ${builtIn}, or make the wrapper call its methods on it ` +
      "(a Proxy's get trap can return each method bound to its target)",
  );
}

/** A thrown value's text, for a message (a value whose message cannot be read is described instead). */
function errorText(err: unknown): string {
  try {
    return err instanceof Error ? `${err.name}: ${err.message}` : describeValue(err);
  } catch {
    return describeValue(err);
  }
}
