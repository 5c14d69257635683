/**
 * @module The step envelope: how a typed workflow's step travels as the
 * bytes of a seed step payload. Pure.
 *
 * UTF-8 canonical JSON `{"payload":...,"step":"<name>","workflow":"<qualified name>"}`
 * (keys sorted at every level), so equal payloads give equal bytes and the
 * runtime's submit check (SHA-256 of step 0's payload) compares values, not
 * key order. The workflow name lets one dispatcher serve every workflow of
 * every spec package on one runtime; the step name picks the handler method.
 */

import { ValidationError } from "../errors.js";
import { describeValue } from "../option-values.js";
import { canonicalJson } from "./canonical-json.js";
import { fromUtf8, utf8 } from "../workflow/records/codec.js";
import { jsonErrorText } from "../redact.js";

/** A decoded step envelope. */
export interface StepEnvelope {
  readonly workflow: string;
  readonly step: string;
  readonly payload: unknown;
}

/** Encodes one step's envelope; throws a `ValidationError` when the payload is not JSON-representable. */
export function encodeStepEnvelope(workflow: string, step: string, payload: unknown): Uint8Array {
  if (typeof workflow !== "string") throw new ValidationError(`a step envelope's workflow name must be a string, got ${describeValue(workflow)}`);
  if (typeof step !== "string") throw new ValidationError(`a step envelope's step name must be a string, got ${describeValue(step)}`);
  return utf8(canonicalJson({ workflow, step, payload }));
}

/** Decodes a step envelope; throws a `ValidationError` saying what is wrong. */
export function decodeStepEnvelope(bytes: Uint8Array): StepEnvelope {
  let v: unknown;
  try {
    v = JSON.parse(fromUtf8(bytes));
  } catch (e) {
    throw new ValidationError(
      `the step payload is not a typed workflow envelope (not JSON: ${jsonErrorText(e)}); submit typed workflows through their generated client`,
    );
  }
  const r = v as { workflow?: unknown; step?: unknown } | null;
  if (r === null || typeof r !== "object" || typeof r.workflow !== "string" || typeof r.step !== "string" || !("payload" in r)) {
    throw new ValidationError(
      "the step payload is not a typed workflow envelope (it lacks workflow, step or payload); submit typed workflows through their generated client",
    );
  }
  return v as StepEnvelope;
}

/** Whether bytes look like a step envelope, without throwing (for dispatchers with a fallback runner). */
export function isStepEnvelope(bytes: Uint8Array): boolean {
  try {
    decodeStepEnvelope(bytes);
    return true;
  } catch {
    return false;
  }
}

const STRING = String.raw`"(?:[^"\\]|\\.)*"`;
const ENVELOPE_TAIL = new RegExp(String.raw`,"step":(${STRING}),"workflow":(${STRING})\}$`);
const JOB_TAIL = new RegExp(String.raw`,"job":(${STRING})\}$`);
/** The tail of a payload read to name it: names longer than this are not named. */
const TAIL_BYTES = 1024;

/**
 * The names a typed payload carries, read from its end without parsing the
 * whole payload (canonical JSON sorts keys, so `step` and `workflow`, or
 * `job`, come last): for listings, where a payload is named on every step.
 * `undefined` for anything else.
 */
export function peekPayloadNames(bytes: Uint8Array): { kind: "workflow" | "job"; name: string; step?: string } | undefined {
  if (bytes.byteLength < 2 || bytes[bytes.byteLength - 1] !== 0x7d) return undefined;
  const tail = fromUtf8(bytes.subarray(Math.max(0, bytes.byteLength - TAIL_BYTES)));
  try {
    const env = ENVELOPE_TAIL.exec(tail);
    if (env !== null) return { kind: "workflow", name: JSON.parse(env[2]!) as string, step: JSON.parse(env[1]!) as string };
    const job = JOB_TAIL.exec(tail);
    if (job !== null && bytes[0] === 0x7b) return { kind: "job", name: JSON.parse(job[1]!) as string };
  } catch {
    // A tail cut inside an escape: leave the payload unnamed.
  }
  return undefined;
}
