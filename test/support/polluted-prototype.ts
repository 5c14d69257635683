/**
 * @module `Object.prototype` changed for the length of a test's body, the
 * way a careless library changes it (an assigned field, an accessor, a
 * read-only intrinsic), and restored after whatever the body did.
 */

/** Runs `read` with `fields` set on `Object.prototype` by plain assignment (enumerable), then removes them; what `read` returned. */
export function withPolluted<T>(fields: Record<string, unknown>, read: () => T): T {
  const proto = Object.prototype as Record<string, unknown>;
  for (const [k, v] of Object.entries(fields)) proto[k] = v;
  try {
    return read();
  } finally {
    for (const k of Object.keys(fields)) delete proto[k];
  }
}

/** Runs `body` with `fields` set on `Object.prototype` by plain assignment (enumerable), then removes them. */
export async function whilePolluted(fields: Record<string, unknown>, body: () => Promise<void>): Promise<void> {
  const proto = Object.prototype as Record<string, unknown>;
  for (const [k, v] of Object.entries(fields)) proto[k] = v;
  try {
    await body();
  } finally {
    for (const k of Object.keys(fields)) delete proto[k];
  }
}

/** Runs `body` with `descriptors` defined on `Object.prototype` (accessors, read-only fields), then removes them. */
export async function whileDefined(descriptors: Record<string, PropertyDescriptor>, body: () => Promise<void>): Promise<void> {
  for (const [k, d] of Object.entries(descriptors)) Object.defineProperty(Object.prototype, k, { ...d, configurable: true });
  try {
    await body();
  } finally {
    for (const k of Object.keys(descriptors)) delete (Object.prototype as Record<string, unknown>)[k];
  }
}

/** Runs `body` with `names` of `Object.prototype` made read-only, as frozen intrinsics make them, then restores them. */
export async function whileReadOnly(names: string[], body: () => Promise<void>): Promise<void> {
  const was = names.map((n) => Object.getOwnPropertyDescriptor(Object.prototype, n)!);
  for (const [i, n] of names.entries()) Object.defineProperty(Object.prototype, n, { ...was[i], writable: false });
  try {
    await body();
  } finally {
    for (const [i, n] of names.entries()) Object.defineProperty(Object.prototype, n, was[i]!);
  }
}

/**
 * What `read` returned (or threw) while `descriptor` is defined under the
 * index names `indexes` on `target` (`Array.prototype`, `Object.prototype`),
 * which are removed after. Nothing else may run meanwhile: a setter of an
 * index takes every `push` of the process, the test's own too.
 */
export function underIndexes<T>(target: object, indexes: readonly string[], descriptor: PropertyDescriptor, read: () => T): { value?: T; error?: unknown } {
  const length = target === Array.prototype ? Array.prototype.length : undefined;
  for (const i of indexes) Object.defineProperty(target, i, { ...descriptor, configurable: true });
  try {
    return { value: read() };
  } catch (error) {
    return { error };
  } finally {
    for (const i of indexes) delete (target as Record<string, unknown>)[i];
    // Array.prototype is an array: an index defined on it grew its length, which a delete leaves (and the decoders
    // read a length above 0 as an index planted there).
    if (length !== undefined) Array.prototype.length = length;
  }
}

/** The prototypes a plain index read falls through to: an object's and an array's. */
export const INDEXED_PROTOTYPES = [
  ["Object.prototype", Object.prototype],
  ["Array.prototype", Array.prototype],
] as const;

/** Runs `body` while `target` holds `value` under `index`, as an assignment leaves it; removes it after. */
export async function whileIndexed(target: object, index: string, value: unknown, body: () => Promise<void>): Promise<void> {
  (target as Record<string, unknown>)[index] = value;
  try {
    await body();
  } finally {
    delete (target as Record<string, unknown>)[index];
    // Array.prototype is an array: the assignment grew its length, which a delete leaves.
    if (target === Array.prototype) Array.prototype.length = 0;
  }
}
