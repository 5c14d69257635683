/**
 * @module The fields of the built-in prototypes and namespaces a test may
 * pollute (see polluted-prototype.ts), read as descriptors so that a change
 * left behind can be named and undone (built-ins-unchanged.setup.ts).
 */

const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;

/** The built-ins watched, by the name a message gives them. */
export const WATCHED_BUILT_INS: readonly (readonly [string, object])[] = [
  ["Object.prototype", Object.prototype],
  ["Array.prototype", Array.prototype],
  ["Function.prototype", Function.prototype],
  ["String.prototype", String.prototype],
  ["Number.prototype", Number.prototype],
  ["Boolean.prototype", Boolean.prototype],
  ["Symbol.prototype", Symbol.prototype],
  ["BigInt.prototype", BigInt.prototype],
  ["Promise.prototype", Promise.prototype],
  ["Map.prototype", Map.prototype],
  ["Set.prototype", Set.prototype],
  ["Error.prototype", Error.prototype],
  ["Date.prototype", Date.prototype],
  ["RegExp.prototype", RegExp.prototype],
  ["ArrayBuffer.prototype", ArrayBuffer.prototype],
  ["SharedArrayBuffer.prototype", SharedArrayBuffer.prototype],
  ["DataView.prototype", DataView.prototype],
  ["TypedArray.prototype", TypedArrayPrototype],
  ["Uint8Array.prototype", Uint8Array.prototype],
  ["Buffer.prototype", Buffer.prototype],
  ["TextEncoder.prototype", TextEncoder.prototype],
  ["TextDecoder.prototype", TextDecoder.prototype],
  ["Object", Object],
  ["Array", Array],
  ["JSON", JSON],
  ["Math", Math],
  ["Reflect", Reflect],
];

/** One built-in's own fields, and whether fields could be added to it. */
interface BuiltInState {
  readonly name: string;
  readonly target: object;
  readonly fields: ReadonlyMap<string | symbol, PropertyDescriptor>;
  readonly extensible: boolean;
}

/** The watched built-ins as they are now. */
export function builtInsState(): BuiltInState[] {
  return WATCHED_BUILT_INS.map(([name, target]) => ({
    name,
    target,
    fields: new Map(Reflect.ownKeys(target).map((k) => [k, Object.getOwnPropertyDescriptor(target, k)!])),
    extensible: Object.isExtensible(target),
  }));
}

function sameDescriptor(a: PropertyDescriptor, b: PropertyDescriptor): boolean {
  return (
    Object.is(a.value, b.value) &&
    a.get === b.get &&
    a.set === b.set &&
    a.writable === b.writable &&
    a.enumerable === b.enumerable &&
    a.configurable === b.configurable
  );
}

/** What changed since `before`, one entry a field ("Object.prototype.wokenAt added"). */
export function builtInsChanged(before: readonly BuiltInState[]): string[] {
  const changed: string[] = [];
  for (const { name, target, fields, extensible } of before) {
    const field = (k: string | symbol) => `${name}.${String(k)}`;
    for (const k of Reflect.ownKeys(target)) {
      const was = fields.get(k);
      if (was === undefined) changed.push(`${field(k)} added`);
      else if (!sameDescriptor(was, Object.getOwnPropertyDescriptor(target, k)!)) changed.push(`${field(k)} changed`);
    }
    for (const k of fields.keys()) if (!Object.hasOwn(target, k)) changed.push(`${field(k)} removed`);
    if (Object.isExtensible(target) !== extensible) changed.push(`${name} made not extensible`);
  }
  return changed;
}

/** Puts every field of `before` back as it was and removes those added since (where the built-in still allows it). */
export function restoreBuiltIns(before: readonly BuiltInState[]): void {
  for (const { target, fields } of before) {
    for (const k of Reflect.ownKeys(target)) if (!fields.has(k)) Reflect.deleteProperty(target, k);
    for (const [k, d] of fields) {
      const now = Object.getOwnPropertyDescriptor(target, k);
      if (now === undefined || !sameDescriptor(now, d)) Reflect.defineProperty(target, k, d);
    }
  }
}
