/**
 * @module Decoded MessagePack maps made objects whose every field is their
 * own. The decoder assigns each key of a map to a fresh object, and an
 * assignment consults `Object.prototype`: a read-only field there of the
 * key's name (every field, in a realm whose intrinsics are frozen) refuses
 * it, and an accessor's setter takes it. `Object.fromEntries` defines each
 * field instead, so neither happens.
 */

/** `v` with every `Map` in it (a decode with maps as `Map`s) made an object by `Object.fromEntries`, arrays copied. */
export function ownObjects(v: unknown): unknown {
  if (v instanceof Map) return Object.fromEntries(Array.from(v, ([k, x]) => [k, ownObjects(x)]));
  if (Array.isArray(v)) return v.map(ownObjects);
  return v;
}
