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

/**
 * Whether `Array.prototype` holds a field named as an index, or
 * `Object.prototype` the index "0" or an enumerable one: a decoder that
 * assigns the elements of the arrays it makes would hand one to a setter
 * there, or throw on a read-only one. `Array.prototype` is itself an array,
 * whose length grows past any index defined on it; `Object.prototype` has
 * no such length, and asking it for every index would cost each decode, so
 * a non-enumerable index above 0 there (an accessor or read-only field
 * defined by hand) is found after the decode instead (see `ownKeyCount`).
 * An assigned one (enumerable) is found here too. (msgpackr also read an
 * index 0-63 there as a record layout, turning integers 64-127 into
 * objects, whether enumerable or not: the decoders' own list of layouts
 * keeps that read from reaching a prototype, see own-layouts.ts.)
 */
export function prototypesHoldAnIndex(): boolean {
  if (Array.prototype.length !== 0 || "0" in Object.prototype) return true;
  // Object.prototype has no enumerable field unless something assigned one: the loop is then empty (a few ns).
  for (const k in Object.prototype) if (isIndexName(k)) return true;
  return false;
}

/** Whether `k` names an array index ("0", "1", ..., no sign, no leading zero). */
function isIndexName(k: string): boolean {
  return k.length > 0 && String(Number(k) >>> 0) === k && Number(k) !== 0xffffffff;
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
 * How many fields the plain objects in `v` own, nested ones included: a
 * decode by assignment owns as many as the bytes' maps hold pairs, unless a
 * setter of `Object.prototype` took one (or a map repeated a key). NaN when
 * an array lacks an element: a setter of `Array.prototype` or
 * `Object.prototype` named as its index took it.
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
 * What `byAssignment` decodes, a decoder assigning each map's fields and
 * array's elements, when its objects own all `entries` fields the bytes'
 * maps hold and its arrays every element; otherwise (a setter of a
 * prototype took one, or a read-only field there refused one) what
 * `defining` decodes from the same bytes, a decoder that defines each. A
 * decode both refuse throws the first one's error.
 */
export function decodedWithOwnFields(entries: number, byAssignment: () => unknown, defining: () => unknown): unknown {
  let v: unknown;
  try {
    v = byAssignment();
  } catch (e) {
    try {
      return defining();
    } catch {
      throw e;
    }
  }
  return ownKeyCount(v) === entries ? v : defining();
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
export function setOwn<T extends object, K extends keyof T & string>(o: T, k: K, v: T[K]): void {
  if (k in Object.prototype) defineOwn(o, k, v);
  else o[k] = v;
}

/**
 * Appends `v` to `list`, defined as its own element: `push` assigns, and an
 * assignment to an index the array does not own yet calls a setter
 * `Array.prototype` or `Object.prototype` holds under that index (the
 * element is then missing, read from the prototype) or throws on a
 * read-only one there. For the lists a record is written from.
 */
export function appendOwn<T>(list: T[], v: T): void {
  Object.defineProperty(list, list.length, { value: v, writable: true, enumerable: true, configurable: true });
}

/**
 * The last element of `list`, undefined when it is empty: never read at
 * index -1, which an object merged into `Object.prototype` under "-1"
 * would answer (the WAL writer took its `promise`, undefined, for a
 * commit's, acknowledging the commit before its WAL object was stored).
 */
export function lastOf<T>(list: readonly T[]): T | undefined {
  return list.length === 0 ? undefined : list[list.length - 1];
}
