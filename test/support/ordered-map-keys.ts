/**
 * @module Questions the tests ask of the engine's ordered map that the
 * engine itself never asks: its keys in order, and the key after a given
 * one. Both are answered through `entries`, the map's own cursor.
 */
import type { OrderedMap } from "../../runtime/engine/ordered-map.js";

/** The keys of `map` in its order. */
export function keysOf<V>(map: OrderedMap<V>): string[] {
  const keys: string[] = [];
  for (const [k] of map.entries()) keys.push(k);
  return keys;
}

/** The smallest key of `map` after `key`, or undefined. */
export function nextHigherKey<V>(map: OrderedMap<V>, key: string): string | undefined {
  const it = map.entries(key);
  let e = it.next();
  if (!e.done && e.value[0] === key) e = it.next();
  return e.done ? undefined : e.value[0];
}
