/**
 * @module Empty arrays made with the elements kind they will hold.
 *
 * V8 keeps an array's elements kind (small integers, doubles, objects) in
 * its hidden class, and an empty literal `[]` starts as small integers: a
 * function optimized for lists of objects that then meets an empty list, or
 * a list of times made by `[]` meeting a double, is deoptimized. Lists made
 * here start as the kind they hold, so the hot functions of the engine,
 * the queue and the workflow layer see one class per list, also for a list
 * of a store, queue or runtime opened after the code was optimized for an
 * earlier one's. Shrinking an array keeps its kind.
 */

/** A new empty array whose elements kind is objects (V8's PACKED_ELEMENTS). */
export function emptyObjects<T>(): T[] {
  const a: unknown[] = [null];
  a.length = 0;
  return a as T[];
}

/**
 * A new empty array of objects (packed, as `emptyObjects`) with room for
 * `n` elements without growing, for a list that takes one or two (a
 * settlement's enqueue, its outcome, a step's two records): V8 grows an
 * empty array to 17 slots at its first element (152 B, most of it never
 * used), where an array that held `n` elements keeps its `n` slots once
 * they are popped (setting `length = 0` would let them go). Past two, an
 * `emptyObjects` list (its first growth holds 17).
 */
export function objectsWithRoom<T>(n: number): T[] {
  if (n === 1) {
    const a: unknown[] = [null];
    a.pop();
    return a as T[];
  }
  if (n === 2) {
    const a: unknown[] = [null, null];
    a.pop();
    a.pop();
    return a as T[];
  }
  return emptyObjects<T>();
}

/**
 * A new array of `n` holes whose elements kind is objects, holey (V8's
 * HOLEY_ELEMENTS), for a list filled by index into room made at once:
 * `new Array(n)` is small integers, holey, until its first store.
 */
export function holeyObjects<T>(n: number): T[] {
  const a: unknown[] = new Array(Math.max(1, n));
  a[0] = null;
  // A hole again, of the kind the store gave the array.
  delete a[0];
  a.length = n;
  return a as T[];
}

/** A new empty array whose elements kind is doubles (V8's PACKED_DOUBLE_ELEMENTS): expiry times in ms are past the small-integer range. */
export function emptyDoubles(): number[] {
  const a = [0.5];
  a.length = 0;
  return a;
}
