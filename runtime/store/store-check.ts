/**
 * @module The check a store wrapper makes of the store it wraps, when made:
 * a value without the four methods (or a revoked Proxy) is refused naming
 * the wrapper, instead of a TypeError at the first request through it;
 * and the same check of a store argument of an entry point. An optional
 * method (getBorrowed, getRange, getRangeInto, removeLeftovers) is either
 * left out or a function: callers test it against `undefined`, so a `null`
 * or other value there would fail every read through it instead.
 */
import { ValidationError } from "../errors.js";
import { describeValue, hasMethods } from "../option-values.js";

const OPTIONAL_METHODS = ["getBorrowed", "getRange", "getRangeInto", "removeLeftovers"] as const;

/** Throws `ValidationError` naming `wrapper` unless `store` has get, put, list and delete methods, and each optional method is a function or left out. */
export function checkStore(wrapper: string, store: unknown): void {
  if (!hasMethods(store, ["get", "put", "list", "delete"]))
    throw new ValidationError(`${wrapper} wraps an ObjectStore (get, put, list, delete), got ${describeValue(store)}`);
  checkOptionalMethods(`the store ${wrapper} wraps`, store);
}

/** Throws `ValidationError` naming `at` (the argument, as "Engine.open's store") unless `store` has get, put, list and delete methods, and each optional method is a function or left out. */
export function checkStoreArg(at: string, store: unknown): void {
  if (!hasMethods(store, ["get", "put", "list", "delete"]))
    throw new ValidationError(`${at} must be an ObjectStore (with get, put, list and delete methods), got ${describeValue(store)}`);
  checkOptionalMethods(at, store);
}

function checkOptionalMethods(at: string, store: unknown): void {
  for (const name of OPTIONAL_METHODS) {
    let value: unknown;
    try {
      value = (store as Record<string, unknown>)[name];
    } catch (err) {
      throw new ValidationError(`${at} threw when its optional method ${name} was read (${describeValue(err)}); leave the method out or make it readable`);
    }
    if (value !== undefined && typeof value !== "function")
      throw new ValidationError(`${at} has ${name} set to ${describeValue(value)}; an optional store method must be a function or left out (not null)`);
  }
}
