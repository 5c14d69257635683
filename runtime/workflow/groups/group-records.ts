/**
 * @module A run group's manifest (in the object store) and its codec. The
 * member records (in the queue's KV namespace) are the workflow records'
 * `GroupMemberRecord`.
 *
 * A MessagePack map with named fields, checked on decode: a damaged manifest
 * throws `StoreCorruptedError` naming its key.
 */
import { StoreCorruptedError } from "../../errors.js";
import { encodeValue } from "../records/codec.js";
import { decodeMap } from "../records/records.js";
import { isPositiveCount, isStoredTime } from "../../value-ranges.js";
import { isPriority } from "../../queue/config.js";
import { ownFieldsIfPolluted, setOwn } from "../../own-fields.js";
import type { RunFlow } from "../runs/run-types.js";

/** The options members are submitted with, as the manifest keeps them for `resume`. */
export interface ManifestOptions {
  headers: Record<string, string>;
  priority?: number;
  maxAttemptsPerStep?: number;
  /** The members' flow rule and keys (a job group of a definition with flow control); absent in manifests of older versions. */
  flow?: RunFlow;
}

/** One member of the manifest. */
export interface ManifestMember {
  key: string;
  input: Uint8Array;
}

/** `{memoPrefix}/groups/{tag}/manifest`: the group's id, members (in submission order) and options. */
export interface GroupManifest {
  groupId: string;
  createdAtMs: number;
  options: ManifestOptions;
  members: ManifestMember[];
}

const isStr = (x: unknown): x is string => typeof x === "string";
const isFlow = (x: unknown): boolean => {
  if (x === undefined) return true;
  const f = x as Record<string, unknown> | null;
  return (
    f !== null &&
    typeof f === "object" &&
    isStr(f.rule) &&
    (f.concurrencyKey === undefined || isStr(f.concurrencyKey)) &&
    (f.rateKey === undefined || isStr(f.rateKey))
  );
};

function compact<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  // Defined where Object.prototype holds the name (see `setOwn`): a setter there would take an assignment.
  for (const [k, v] of Object.entries(o)) if (v !== undefined) setOwn(out, k, v);
  return out as T;
}

export function encodeManifest(m: GroupManifest): Uint8Array {
  return encodeValue({ ...m, options: compact(m.options) });
}

const OPTIONS_OPTIONAL: readonly (keyof ManifestOptions)[] = ["priority", "maxAttemptsPerStep", "flow"];
const FLOW_OPTIONAL: readonly (keyof RunFlow)[] = ["concurrencyKey", "rateKey"];
const NESTED_OPTIONAL: readonly string[] = [...OPTIONS_OPTIONAL, ...FLOW_OPTIONAL];

export function decodeManifest(bytes: Uint8Array, key: string): GroupManifest {
  const v = decodeMap(bytes, key, "group manifest", undefined, NESTED_OPTIONAL);
  const o = v.options as Record<string, unknown> | null;
  if (o !== null && typeof o === "object") {
    ownFieldsIfPolluted(o, OPTIONS_OPTIONAL);
    if (o.flow !== null && typeof o.flow === "object") ownFieldsIfPolluted(o.flow, FLOW_OPTIONAL);
  }
  const ok =
    isStr(v.groupId) &&
    isStoredTime(v.createdAtMs) &&
    o !== null &&
    typeof o === "object" &&
    (o.priority === undefined || isPriority(o.priority)) &&
    (o.maxAttemptsPerStep === undefined || isPositiveCount(o.maxAttemptsPerStep)) &&
    o.headers !== null &&
    typeof o.headers === "object" &&
    isFlow(o.flow) &&
    Array.isArray(v.members) &&
    v.members.every(
      (m: unknown) => m !== null && typeof m === "object" && isStr((m as ManifestMember).key) && (m as ManifestMember).input instanceof Uint8Array,
    );
  if (!ok) throw new StoreCorruptedError(key, "group manifest lacks its id, options or members, or holds a time, priority or attempt limit outside its range");
  return v as unknown as GroupManifest;
}
