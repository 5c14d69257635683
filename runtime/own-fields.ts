/**
 * @module Decoded records under a polluted `Object.prototype`. A record a
 * codec decodes is a plain object, and its codec leaves an absent optional
 * field out: reading `record.field` then finds whatever `Object.prototype`
 * holds under that name (a library that merged a parsed
 * `{"__proto__": ...}` sets it for every object of the process). A decoder
 * asks `prototypeHoldsAny` at every decode (the prototype can change at any
 * time) and, only then, gives the record each optional field as its own.
 */

/**
 * Whether `Object.prototype` holds one of `names`, own or not enumerable
 * alike. A few ns a name; a decoder on a hot path may write its names out
 * instead (see `decodeJob`), which V8 answers from its caches.
 */
export function prototypeHoldsAny(names: readonly string[]): boolean {
  const p = Object.prototype;
  for (let i = 0; i < names.length; i++) if (names[i]! in p) return true;
  return false;
}

/**
 * Gives `o` each of `names` it lacks as its own field, undefined (what the
 * codec's omission meant), so none is read through the prototype. Defined,
 * not assigned: an assignment would call a setter the prototype holds under
 * that name, or throw on a read-only one, and leave the field unowned.
 */
export function ownEveryField(o: object, names: Iterable<string>): void {
  for (const k of names) {
    if (!Object.hasOwn(o, k)) Object.defineProperty(o, k, { value: undefined, writable: true, enumerable: true, configurable: true });
  }
}

/** `ownEveryField` when `Object.prototype` holds one of `names`: for a decoded record `o` that is an object. */
export function ownFieldsIfPolluted(o: object, names: readonly string[]): void {
  if (prototypeHoldsAny(names)) ownEveryField(o, names);
}

/**
 * The object `fill` builds by assignments (a constructor function's body),
 * built on an object with no prototype and given `Object.prototype` after:
 * for when the prototype holds one of its field names, whose setter would
 * take an assignment (and leave the field unowned) or whose read-only field
 * would refuse it.
 */
export function filledWithoutPrototype<A extends unknown[], T extends object>(fill: (this: T, ...args: A) => void, ...args: A): T {
  const o = Object.create(null) as T;
  fill.apply(o, args);
  return Object.setPrototypeOf(o, Object.prototype) as T;
}
