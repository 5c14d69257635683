/**
 * @module The check a store wrapper makes of the store it wraps, when made:
 * a value without the four methods (or a revoked Proxy) is refused naming
 * the wrapper, instead of a TypeError at the first request through it;
 * and the same check of a store argument of an entry point.
 */
import { ValidationError } from "../errors.js";
import { describeValue, hasMethods } from "../option-values.js";

/** Throws `ValidationError` naming `wrapper` unless `store` has get, put, list and delete methods. */
export function checkStore(wrapper: string, store: unknown): void {
  if (!hasMethods(store, ["get", "put", "list", "delete"]))
    throw new ValidationError(`${wrapper} wraps an ObjectStore (get, put, list, delete), got ${describeValue(store)}`);
}

/** Throws `ValidationError` naming `at` (the argument, as "Engine.open's store") unless `store` has get, put, list and delete methods. */
export function checkStoreArg(at: string, store: unknown): void {
  if (!hasMethods(store, ["get", "put", "list", "delete"]))
    throw new ValidationError(`${at} must be an ObjectStore (with get, put, list and delete methods), got ${describeValue(store)}`);
}
