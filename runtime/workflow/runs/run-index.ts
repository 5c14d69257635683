/**
 * @module The run index: KV entries that list a step queue's runs newest
 * first without reading the whole state. Pure (keys, codecs, cursors);
 * the writers stage its entries in the commits that change a run.
 *
 * Keys (`{q}` the step queue, `{t}` 16 digits of `INVERTED_TIME_MAX -
 * submittedAtMs`, so byte order is newest first, then the run id):
 * - `workflow/run-index/{q}/{t}{runId}`: every run, from its submission to
 *   its sweep; the value is the run's {@link IndexEntry} (what never changes);
 * - `workflow/run-names/{q}/{h}/{t}{runId}`: runs of one typed workflow or
 *   job (`{h}` the first 20 hex digits of the name's SHA-256), same lifetime;
 * - `workflow/run-ended/{q}/{status}/{t}{runId}`: ended runs by how they
 *   ended, written by the terminating commit, removed by a redrive or the
 *   sweep.
 *
 * So a submission writes two entries (one without a typed name), a
 * termination one, and a step transition none: the state of an active run
 * is read from its step pointer and step job when it is listed.
 */
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import { MAX_INSTANT_MS } from "../../time-bounds.js";
import { decodeMap, isSubmissionId } from "../records/records.js";
import { isCount, isPositiveCount, isStoredTime } from "../../value-ranges.js";
import { isPriority } from "../../queue/config.js";
import { ownFieldsIfPolluted, setOwn } from "../../own-fields.js";
import { encodeValue, sha256Hex } from "../records/codec.js";
import { type CommitOnlyBytes, type CommitTarget, encodeForCommit } from "../records/commit-bytes.js";
import { RESERVED_KV_PREFIX } from "../records/reserved.js";
import type { TerminalStatus } from "./run-types.js";

export const RUN_INDEX_PREFIX = `${RESERVED_KV_PREFIX}run-index/`;
export const RUN_NAMES_PREFIX = `${RESERVED_KV_PREFIX}run-names/`;
export const RUN_ENDED_PREFIX = `${RESERVED_KV_PREFIX}run-ended/`;

const TIME_DIGITS = 16;
/** The largest instant (the largest a `Date` holds): below 2^53, so every inverted time is exact. */
export const INVERTED_TIME_MAX = MAX_INSTANT_MS;
/** A run's input is kept in its index entry up to this size, so a redrive can start again at step 0. */
export const INDEX_INPUT_BYTES = 4096;

/** What the index keeps of a run: what its submission fixed. */
export interface IndexEntry {
  submittedAtMs: number;
  /** The typed workflow or job name, as the runner described the input. */
  workflow?: string;
  kind?: "workflow" | "job";
  headers: Record<string, string>;
  /** The group's id as named by its user, the member key, and the group's storage tag. */
  group?: { id: string; key: string; tag?: string };
  /** Step 0's payload, when at most {@link INDEX_INPUT_BYTES}. */
  input?: Uint8Array;
  /** What a redrive restores of the run record: the input's hash and the step options. */
  inputSha256?: string;
  priority?: number;
  maxAttempts?: number;
  /** The run that started this one as its child, and the step that did (see `ParentRef`). */
  parent?: { runId: string; step: number; parentClose?: "cancel" | "abandon"; submission?: string };
  /** The run record's `submission`, which a redrive restores. */
  submission?: string;
  /** The run record's `memoSet`, which a redrive restores (the run keeps its memos). */
  memoSet?: string;
  /** The flow-control headers of every step (`RunOptions.flow`), which a redrive restores. */
  flow?: Record<string, string>;
}

/** `{t}{runId}`: the part of every index key after its prefix. */
export function indexSuffix(submittedAtMs: number, runId: string): string {
  return `${String(INVERTED_TIME_MAX - Math.floor(submittedAtMs)).padStart(TIME_DIGITS, "0")}${runId}`;
}

/** The time part of a suffix that lists runs submitted before `ms` first: the suffix bound for `submittedBefore`. */
export function timeBound(ms: number): string {
  return String(INVERTED_TIME_MAX - Math.floor(ms)).padStart(TIME_DIGITS, "0");
}

const SUFFIX_RE = new RegExp(`^(\\d{${TIME_DIGITS}})([A-Za-z0-9_-]{1,128})$`);

/** The submission time and run id of a suffix; `undefined` when it is not one. */
export function parseSuffix(suffix: string): { submittedAtMs: number; runId: string } | undefined {
  const m = SUFFIX_RE.exec(suffix);
  if (m === null) return undefined;
  return { submittedAtMs: INVERTED_TIME_MAX - Number(m[1]), runId: m[2]! };
}

export const runIndexPrefix = (q: string): string => `${RUN_INDEX_PREFIX}${q}/`;
export const runIndexKey = (q: string, submittedAtMs: number, runId: string): string => `${runIndexPrefix(q)}${indexSuffix(submittedAtMs, runId)}`;
export const nameHash = (name: string): string => sha256Hex(name).slice(0, 20);
export const runNamesPrefix = (q: string, name: string): string => `${RUN_NAMES_PREFIX}${q}/${nameHash(name)}/`;
export const runNameKey = (q: string, name: string, submittedAtMs: number, runId: string): string =>
  `${runNamesPrefix(q, name)}${indexSuffix(submittedAtMs, runId)}`;
export const runEndedPrefix = (q: string, status: TerminalStatus): string => `${RUN_ENDED_PREFIX}${q}/${status}/`;
export const runEndedKey = (q: string, status: TerminalStatus, submittedAtMs: number, runId: string): string =>
  `${runEndedPrefix(q, status)}${indexSuffix(submittedAtMs, runId)}`;

const EMPTY = new Uint8Array(0);
/** The value of name and ended entries: the key says everything. */
export const EMPTY_VALUE = EMPTY;

export function encodeIndexEntry(e: IndexEntry): Uint8Array {
  return encodeValue(storedIndexEntry(e));
}

/** `encodeIndexEntry` for a put staged into a commit of `target` (see `CommitOnlyBytes`). */
export function indexEntryForCommit(e: IndexEntry, target: CommitTarget): CommitOnlyBytes {
  return encodeForCommit(storedIndexEntry(e), target);
}

function storedIndexEntry(e: IndexEntry): Record<string, unknown> {
  const out: Record<string, unknown> = { submittedAtMs: e.submittedAtMs, headers: e.headers };
  // Each optional field set own (see `setOwn`): a setter of Object.prototype named as one would take an assignment.
  if (e.workflow !== undefined) setOwn(out, "workflow", e.workflow);
  if (e.kind !== undefined) setOwn(out, "kind", e.kind);
  if (e.group !== undefined) setOwn(out, "group", { id: e.group.id, key: e.group.key, ...(e.group.tag === undefined ? {} : { tag: e.group.tag }) });
  if (e.input !== undefined) setOwn(out, "input", e.input);
  if (e.inputSha256 !== undefined) setOwn(out, "inputSha256", e.inputSha256);
  if (e.priority !== undefined) setOwn(out, "priority", e.priority);
  if (e.maxAttempts !== undefined) setOwn(out, "maxAttempts", e.maxAttempts);
  if (e.parent !== undefined) setOwn(out, "parent", { ...e.parent });
  if (e.submission !== undefined) setOwn(out, "submission", e.submission);
  if (e.memoSet !== undefined) setOwn(out, "memoSet", e.memoSet);
  // Entries written before this field have none: their redrives carry no flow headers, as then.
  if (e.flow !== undefined) setOwn(out, "flow", { ...e.flow });
  return out;
}

const isStr = (x: unknown): x is string => typeof x === "string";

/** The fields of an index entry that entries written by earlier versions may lack. */
export const INDEX_OPTIONAL: readonly (keyof IndexEntry)[] = [
  "workflow",
  "kind",
  "group",
  "input",
  "inputSha256",
  "priority",
  "maxAttempts",
  "parent",
  "submission",
  "memoSet",
  "flow",
];
const GROUP_OPTIONAL: readonly string[] = ["tag"];
const PARENT_OPTIONAL: readonly string[] = ["parentClose", "submission"];
const NESTED_OPTIONAL = [...GROUP_OPTIONAL, ...PARENT_OPTIONAL];

export function decodeIndexEntry(bytes: Uint8Array, key: string): IndexEntry {
  const v = decodeMap(bytes, key, "run index entry", INDEX_OPTIONAL, NESTED_OPTIONAL);
  if (v.group !== null && typeof v.group === "object") ownFieldsIfPolluted(v.group, GROUP_OPTIONAL);
  if (v.parent !== null && typeof v.parent === "object") ownFieldsIfPolluted(v.parent, PARENT_OPTIONAL);
  const h = v.headers;
  const headersOk = h !== null && typeof h === "object" && !Array.isArray(h) && Object.values(h as object).every(isStr);
  const g = v.group as { id?: unknown; key?: unknown } | undefined | null;
  const p = v.parent as { runId?: unknown; step?: unknown; submission?: unknown } | undefined | null;
  const ok =
    isStoredTime(v.submittedAtMs) &&
    headersOk &&
    (v.workflow === undefined || isStr(v.workflow)) &&
    (v.kind === undefined || v.kind === "workflow" || v.kind === "job") &&
    (v.group === undefined || (g !== null && typeof g === "object" && isStr(g.id) && isStr(g.key))) &&
    (v.input === undefined || v.input instanceof Uint8Array) &&
    (v.inputSha256 === undefined || isStr(v.inputSha256)) &&
    (v.priority === undefined || isPriority(v.priority)) &&
    (v.maxAttempts === undefined || isPositiveCount(v.maxAttempts)) &&
    (v.parent === undefined ||
      (p !== null && typeof p === "object" && isStr(p.runId) && isCount(p.step) && (p.submission === undefined || isStr(p.submission)))) &&
    (v.submission === undefined || isSubmissionId(v.submission)) &&
    // Every version that stored a memo set stored the submission too (a redrive restores both).
    (v.memoSet === undefined || (isStr(v.memoSet) && v.submission !== undefined)) &&
    (v.flow === undefined || (v.flow !== null && typeof v.flow === "object" && !Array.isArray(v.flow) && Object.values(v.flow as object).every(isStr)));
  if (!ok)
    throw new StoreCorruptedError(
      key,
      "run index entry lacks its submission time or has malformed fields (a time, priority, attempt limit or step outside its range among them)",
    );
  return v as unknown as IndexEntry;
}

/** Which index a listing reads, as its cursor records it. */
export type IndexScan =
  | { readonly kind: "all" }
  | { readonly kind: "name"; readonly hash: string }
  | { readonly kind: "ended"; readonly status: TerminalStatus };

function scanTag(s: IndexScan): string {
  return s.kind === "all" ? "a" : s.kind === "name" ? `n${s.hash}` : `e${s.status}`;
}

/** An opaque cursor: the scan it belongs to and the last suffix it covered. */
export function encodeCursor(scan: IndexScan, suffix: string): string {
  return `r1.${Buffer.from(`${scanTag(scan)}|${suffix}`, "utf8").toString("base64url")}`;
}

/** The suffix a cursor continues after; `ValidationError` when it was not handed out by a listing with the same filters. */
export function decodeCursor(cursor: unknown, scan: IndexScan): string {
  const refuse = (why: string): never => {
    throw new ValidationError(`cursor ${JSON.stringify(String(cursor).slice(0, 80))} ${why}; pass the nextCursor of the previous page, with the same filters`);
  };
  if (typeof cursor !== "string" || !cursor.startsWith("r1.") || cursor.length > 400) return refuse("is not a listing cursor");
  const text = Buffer.from(cursor.slice(3), "base64url").toString("utf8");
  const bar = text.indexOf("|");
  if (bar < 0) return refuse("is not a listing cursor");
  if (text.slice(0, bar) !== scanTag(scan)) return refuse("belongs to a listing with other filters");
  const suffix = text.slice(bar + 1);
  if (parseSuffix(suffix) === undefined) return refuse("is damaged");
  return suffix;
}
