/**
 * @module Decoded records under a polluted `Object.prototype`. A record a
 * codec decodes is a plain object, and its codec leaves an absent optional
 * field out: reading `record.field` then finds whatever `Object.prototype`
 * holds under that name (a library that merged a parsed
 * `{"__proto__": ...}` sets it for every object of the process). A decoder
 * asks `prototypeHoldsAny` at every decode (the prototype can change at any
 * time) and, only then, gives the record each optional field as its own.
 * The decoder itself assigns each field of a map, and an assignment calls
 * a setter the prototype holds under that name: `decodedWithOwnFields`
 * decodes again, defining each field, when the objects own fewer fields
 * than the bytes hold.
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
    if (!Object.hasOwn(o, k)) defineOwn(o, k, undefined);
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

/**
 * `v`, a decode with maps as `Map`s, with every `Map` made an object by
 * `Object.fromEntries` and arrays copied. `fromEntries` defines each field:
 * a decoder's assignment `o[key] = value` would instead call a setter
 * `Object.prototype` holds under `key` (leaving the field unowned) or throw
 * on a read-only field there (every field, in a realm whose intrinsics are
 * frozen).
 */
export function ownObjects(v: unknown): unknown {
  if (v instanceof Map) return Object.fromEntries(Array.from(v, ([k, x]) => [k, ownObjects(x)]));
  if (Array.isArray(v)) return v.map(ownObjects);
  return v;
}

/**
 * How many fields the plain objects in `v` own, nested ones included: a
 * decode by assignment owns as many as the bytes' maps hold pairs, unless a
 * setter of `Object.prototype` took one (or a map repeated a key). NaN,
 * which equals no count, when an array lacks an element: a setter of an
 * index ("0") on `Array.prototype` or `Object.prototype` took it.
 */
export function ownKeyCount(v: unknown): number {
  if (v === null || typeof v !== "object") return 0;
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!Object.hasOwn(v, i)) return Number.NaN;
      n += ownKeyCount(v[i]);
    }
    return n;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return 0;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  n = keys.length;
  for (let i = 0; i < keys.length; i++) n += ownKeyCount(o[keys[i]!]);
  return n;
}

/**
 * What `byAssignment` decodes, a decoder assigning each map's fields, when
 * its objects own all `entries` fields the bytes' maps hold; otherwise (a
 * setter of `Object.prototype` took a field, or a read-only field there
 * refused one) what `asMaps` decodes from the same bytes with maps as
 * `Map`s, made objects by `ownObjects`. A decode both refuse throws the
 * first one's error.
 */
export function decodedWithOwnFields(entries: number, byAssignment: () => unknown, asMaps: () => unknown): unknown {
  let v: unknown;
  try {
    v = byAssignment();
  } catch (e) {
    try {
      return ownObjects(asMaps());
    } catch {
      throw e;
    }
  }
  return ownKeyCount(v) === entries ? v : ownObjects(asMaps());
}

/** Gives `o` its own field `k` holding `v`, defined (not assigned, see `ownEveryField`): for a record a decoder builds. */
export function defineOwn(o: object, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

/**
 * Gives `o` its own field `k` holding `v`: assigned (the fast path) unless
 * `Object.prototype` holds `k`, where a setter would take the assignment
 * (and `o` be written without the field) or a read-only field refuse it,
 * and the field is defined instead.
 */
export function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k in Object.prototype) defineOwn(o, k, v);
  else o[k] = v;
}
