/**
 * @module A store wrapper whose calls fail while a test says so, to drive
 * the paths taken when the store is unreachable. (`withFaults` fails at
 * random with its own error; this fails exactly when told, with the error
 * the test chooses.)
 */
import type { ObjectStore } from "taquba";

/** An `ObjectStore` operation, as `failWhen` names it. */
export type StoreCall = "get" | "put" | "delete" | "list";

/**
 * Wraps `inner`: each call first asks `failure(call, key)`; an error it
 * returns is thrown (a rejected promise) instead of calling `inner`. A
 * listing passes its prefix as the key and fails on its first step.
 */
export function failWhen(inner: ObjectStore, failure: (call: StoreCall, key: string) => Error | undefined): ObjectStore {
  return {
    get: (k) => {
      const err = failure("get", k);
      return err ? Promise.reject(err) : inner.get(k);
    },
    put: (k, b, o) => {
      const err = failure("put", k);
      return err ? Promise.reject(err) : inner.put(k, b, o);
    },
    delete: (k) => {
      const err = failure("delete", k);
      return err ? Promise.reject(err) : inner.delete(k);
    },
    list: (p, o) => {
      const err = failure("list", p);
      if (err === undefined) return inner.list(p, o);
      return { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(err) }) };
    },
  };
}
