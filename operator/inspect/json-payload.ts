/**
 * @module A signal payload given as JSON text, checked and encoded the way
 * typed signals carry it (compact UTF-8 JSON).
 */
import { ValidationError } from "../../runtime/errors.js";
import { MAX_SIGNAL_PAYLOAD_BYTES } from "../../runtime/workflow/limits.js";

export function encodeJsonPayload(text: string, what = "the payload"): Uint8Array {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ValidationError(`${what} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  if (bytes.byteLength > MAX_SIGNAL_PAYLOAD_BYTES) {
    throw new ValidationError(`${what} has ${bytes.byteLength} bytes; a signal payload holds at most ${MAX_SIGNAL_PAYLOAD_BYTES}`);
  }
  return bytes;
}
