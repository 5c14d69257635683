/**
 * @module Names of the engine's objects in the store, and the format
 * constants every version of the engine must agree on.
 *
 * Layout under the engine's prefix:
 * - `manifest/<n>`: numbered manifests, each created once with put-if-absent.
 * - `wal/<seq>`: WAL objects (group-committed batches, or fence markers).
 * - `seg/<epoch>-<n>`: immutable sorted segments written by checkpoints.
 * Numbers are zero-padded to 20 digits so that key order is numeric order.
 */
import { describeValue } from "../option-values.js";
import { StoreCorruptedError, ValidationError } from "../errors.js";
import { validateObjectKey } from "../store/keys.js";

/**
 * How many WAL sequence numbers a new writer skips past its fence marker.
 * A writer never has a WAL put outstanding at or beyond (durable watermark +
 * this window), so a fenced writer's late puts can only land inside the
 * skipped range, never where the new writer writes.
 */
export const WAL_FENCE_JUMP = 64;

const PAD = 20;

/** Checks an engine key prefix: "" or a valid key path ending in "/". */
export function checkPrefix(prefix: string): string {
  if (prefix === "") return prefix;
  if (typeof prefix !== "string")
    throw new ValidationError(`prefix must be a string (an object key prefix ending in "/", or ""), got ${describeValue(prefix)}`);
  if (!prefix.endsWith("/")) throw new ValidationError(`the engine prefix ${JSON.stringify(prefix)} must be "" or end with "/"`);
  validateObjectKey(`${prefix}x`);
  return prefix;
}

/** `n` zero-padded to 20 digits, so key order is numeric order. */
export function padNumber(n: number): string {
  return String(n).padStart(PAD, "0");
}

/**
 * The last number a WAL object or manifest gets: past it a number and the
 * next one are the same double, so a read of "the next one" would find the
 * same object for ever. No writer gets near it (one per commit group or
 * checkpoint); only an object another program put there can.
 */
const LAST_NUMBER = Number.MAX_SAFE_INTEGER;

/** `n`, refused past `LAST_NUMBER`: a store listing such a number holds objects taquba did not write there. */
function checkedNumber(prefix: string, dir: "wal" | "manifest", n: number): number {
  if (n <= LAST_NUMBER) return n;
  throw new StoreCorruptedError(
    `${prefix}${dir}/${padNumber(LAST_NUMBER)}`,
    `the store holds ${dir} objects numbered up to ${LAST_NUMBER}, the last number taquba gives one, so none can follow it`,
    `remove the ${dir} objects numbered beyond the store's real ones (another program put them there), or restore the store from a backup`,
  );
}

/** Key of WAL object `seq`. */
export function walKey(prefix: string, seq: number): string {
  return `${prefix}wal/${padNumber(checkedNumber(prefix, "wal", seq))}`;
}

/** Key of manifest `n`. */
export function manifestKey(prefix: string, n: number): string {
  return `${prefix}manifest/${padNumber(checkedNumber(prefix, "manifest", n))}`;
}

/** Key of segment `n` written by writer `epoch`. */
export function segmentKey(prefix: string, epoch: number, n: number): string {
  return `${prefix}seg/${padNumber(epoch)}-${padNumber(n)}`;
}

/**
 * The number at the end of a `wal/` or `manifest/` key, or undefined if it
 * is not one. A number past `LAST_NUMBER` is none taquba writes, and one a
 * double cannot hold apart from its neighbours (two keys would read as one
 * number): such a key is not one of the engine's objects.
 */
export function parseNumberedKey(prefix: string, dir: "wal" | "manifest", key: string): number | undefined {
  const head = `${prefix}${dir}/`;
  if (!key.startsWith(head)) return undefined;
  const tail = key.slice(head.length);
  if (tail.length !== PAD || !/^[0-9]+$/.test(tail)) return undefined;
  const n = Number(tail);
  return n <= LAST_NUMBER ? n : undefined;
}

/** The writer epoch encoded in a segment key, or undefined if it is not one. */
export function parseSegmentEpoch(prefix: string, key: string): number | undefined {
  return parseSegmentKey(prefix, key)?.epoch;
}

/** The writer epoch and that writer's segment number encoded in a segment key, or undefined if it is not one. */
export function parseSegmentKey(prefix: string, key: string): { epoch: number; n: number } | undefined {
  const head = `${prefix}seg/`;
  if (!key.startsWith(head)) return undefined;
  const m = /^([0-9]{20})-([0-9]{20})$/.exec(key.slice(head.length));
  return m ? { epoch: Number(m[1]), n: Number(m[2]) } : undefined;
}
