/**
 * @module The built-in stores whose methods work only on the store itself:
 * they keep their state in private fields, which a Proxy or another object
 * wrapping the store does not have. A method read through such a wrapper
 * and called on it fails with a TypeError at the first request, which a
 * store check tells apart from the store being unreachable before any
 * request (see `store-check`).
 *
 * Each built-in store class declares itself here when its module loads: a
 * store a caller wrapped was made from a loaded class.
 */

/** A built-in store class: its name and whether a value is one of its stores (holds its private state). */
interface BuiltInStore {
  readonly name: string;
  readonly owns: (value: object) => boolean;
}

/** Each prototype method of a built-in store class, to the class. */
const methodOwners = new WeakMap<object, BuiltInStore>();

/**
 * Declares the store class whose prototype is `prototype`, named `name`:
 * `owns` says whether a value holds its private state (a private-field
 * `in` check, which a Proxy of a store fails).
 */
export function declareBuiltInStore(prototype: object, name: string, owns: (value: object) => boolean): void {
  const store: BuiltInStore = { name, owns };
  for (const key of Object.getOwnPropertyNames(prototype)) {
    if (key === "constructor") continue;
    const d = Object.getOwnPropertyDescriptor(prototype, key);
    if (typeof d?.value === "function") methodOwners.set(d.value as object, store);
  }
}

/**
 * The built-in store class whose own method `method` is, when `target`
 * (the object it was read from, which it would be called on) is not one
 * of that class's stores; undefined otherwise (any other function, or a
 * method on its own store or a subclass's).
 */
export function builtInMethodOffItsStore(method: unknown, target: object): string | undefined {
  if (typeof method !== "function") return undefined;
  const owner = methodOwners.get(method);
  return owner === undefined || owner.owns(target) ? undefined : owner.name;
}
