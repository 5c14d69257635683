/**
 * @module The guard every `define*` function puts around the definition it
 * is given. Generated code is their usual caller, but they are exported:
 * a definition that is not an object, or whose fields throw or have the
 * wrong shape, is a `ValidationError` naming the function, never a
 * TypeError from deep inside (nor a hang spreading a 10 MB string).
 */
import { TaqubaError, ValidationError } from "../errors.js";
import { describeValue, errorText, isOptionObject } from "../option-values.js";

/** `build()`, when `spec` is an object; anything it throws that is not a `TaqubaError` becomes a `ValidationError` naming `fn`. */
export function checkedDefinition<T>(fn: string, spec: unknown, build: () => T): T {
  if (!isOptionObject(spec)) throw new ValidationError(`${fn} takes a definition object (as generated code passes), got ${describeValue(spec)}`);
  try {
    return build();
  } catch (err) {
    if (err instanceof TaqubaError) throw err;
    throw new ValidationError(`${fn}: the definition is malformed (${errorText(err)}); regenerate it from its spec`);
  }
}
