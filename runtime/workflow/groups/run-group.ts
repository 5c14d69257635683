/**
 * @module `RunGroup`: a durable set of runs of one runtime, identified by a
 * group id.
 *
 * Durable state: the manifest (member keys and inputs, in submission order,
 * and the submission options) in the memo object store, and one member
 * record per key in the queue's KV namespace, written with the member's
 * submission and rewritten by the settlement that terminates it. Nothing
 * else is kept: every method works after a restart and from any runtime
 * over the same queue and store.
 */
import { appendOwn } from "../../own-fields.js";
import { checkGroupSize, MAX_GROUP_KEY_BYTES, MAX_GROUP_MEMBERS } from "../limits.js";
import { validateInstant } from "../../time-bounds.js";
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import { bytesAtCall } from "../bytes-at-call.js";
import { isWellFormed } from "../../queue/names.js";
import { bytesEqual } from "../../store/bytes-equal.js";
import { decodeValue, utf8 } from "../records/codec.js";
import { SettlementEffects } from "../../queue/effects.js";
import { stageForgotten } from "../runs/index-effects.js";
import { decodeTerminalRecord } from "../records/records.js";
import { encodeRetainedPart } from "./group-marker.js";
import { encodeGroupIndexEntry, groupIndexKey } from "./group-index.js";
import { groupMemberKey, groupMembersPrefix, groupTerminalMarkers, groupTag, manifestKey, memberRunId } from "./group-keys.js";
import { decodeManifest, encodeManifest, type GroupManifest, type ManifestMember, type ManifestOptions } from "./group-records.js";
import { GroupActiveError, GroupMemberDamagedError, GroupNotFoundError } from "./group-errors.js";
import type { GroupHost } from "./group-host.js";
import { terminalRecordKey } from "../records/kv-keys.js";
import { decodeGroupMember, type GroupMemberRecord } from "../records/records.js";
import { RunId } from "../runs/run-id.js";
import type { RunErrorKind, RunOptions, RunOutcome, TerminalStatus } from "../runs/run-types.js";
import { checkUserHeaders, flowHeaders } from "../runs/submit.js";
import { routedOn } from "../runs/shard-placement.js";
import { InputMismatchError } from "../workflow-errors.js";
import {
  describeValue,
  isOptionArray,
  isOptionBytes,
  isOptionObject,
  optionFields,
  quoteValue,
  readOptionArray,
  readOptions,
  refuseUnknownFields,
} from "../../option-values.js";
import { readRunOptions } from "../runs/run-option-fields.js";

/** One member to submit: a key unique in the group and the input of its run's step 0. */
export interface GroupMember {
  readonly key: string;
  readonly input: Uint8Array;
}

/** What a submission did with one member. */
export type MemberSubmission = "submitted" | "active" | "succeeded";

/** What `RunGroup.submit` and `RunGroup.resume` report. */
export interface GroupSubmitOutcome {
  readonly groupId: string;
  /** Members whose run was submitted now (new, or run again after failing or being cancelled). */
  readonly submitted: number;
  /** Per member of the call, in its order: submitted now, already active, or already succeeded (left alone). */
  readonly members: ReadonlyArray<{ readonly key: string; readonly runId: RunId; readonly submission: MemberSubmission }>;
}

/** A member's termination, as `RunGroup.results` yields it. */
export interface MemberResult {
  readonly key: string;
  readonly runId: RunId;
  readonly status: TerminalStatus;
  readonly error?: string;
  readonly errorKind?: RunErrorKind;
  readonly terminatedAtMs?: number;
  /** The committed outcome, when the worker that terminated the run recorded one (and it was not swept). */
  readonly outcome?: RunOutcome;
}

/** Counts of a group's members by state. */
export interface GroupStatus {
  readonly total: number;
  /** In the manifest but never submitted (a submission interrupted by a crash): `resume` submits them. */
  readonly unsubmitted: number;
  readonly pending: number;
  /** Claimed by a worker, or cancelling. */
  readonly running: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly cancelled: number;
}

/** A submission that leaves ended members alone reports them as such. */
interface LeftAloneOutcome {
  readonly groupId: string;
  readonly submitted: number;
  readonly members: ReadonlyArray<{ readonly key: string; readonly runId: RunId; readonly submission: MemberSubmission | "ended" }>;
}

/** Member submissions in flight at once. */
const SUBMIT_CONCURRENCY = 16;
const MAX_ID_BYTES = MAX_GROUP_KEY_BYTES;

/** @internal Checks a group id or member key: 1 to 512 bytes of well-formed text. */
export function checkText(what: string, s: unknown): string {
  if (typeof s !== "string" || s.length === 0 || !isWellFormed(s) || utf8(s).byteLength > MAX_ID_BYTES) {
    throw new ValidationError(`${what} must be 1 to ${MAX_ID_BYTES} bytes of well-formed text, got ${describeValue(s)}`);
  }
  return s;
}

const MEMBER_FIELDS = optionFields<GroupMember>({ key: true, input: true });

/**
 * @internal A submission's members as checked copies: keys well formed and
 * distinct, inputs bytes. The array and each member's fields are read once
 * (a getter answering another key on a second read cannot pass the check
 * with one key and be submitted under another); use the copies, never
 * `members`.
 */
export function checkMembers(members: readonly GroupMember[]): GroupMember[] {
  if (!isOptionArray(members)) throw new ValidationError(`submit takes an array of { key, input } members, got ${describeValue(members)}`);
  const given = readOptionArray("the group's members", members, "an array of { key, input } members", MAX_GROUP_MEMBERS);
  const seen = new Set<string>();
  const out: GroupMember[] = [];
  for (const [i, m] of given.entries()) {
    if (!isOptionObject(m)) throw new ValidationError(`member ${i} of the group must be an object { key, input }, got ${describeValue(m)}`);
    const fields = readOptions(m, MEMBER_FIELDS, `member ${i} of the group`);
    const key = checkText("a member key", fields.key);
    const input = fields.input;
    if (!isOptionBytes(input)) throw new ValidationError(`member ${quoteValue(key)} needs a Uint8Array input, got ${describeValue(input)}`);
    refuseUnknownFields(m, MEMBER_FIELDS, `member ${quoteValue(key)}.`, `member ${quoteValue(key)}`);
    if (seen.has(key)) throw new ValidationError(`member key ${quoteValue(key)} appears twice; keys identify members within a group`);
    seen.add(key);
    // Defined, not pushed: a setter of a prototype named as the index would take the member, and the manifest be written without it.
    // The input as it is now: the members are submitted after the group's manifest is written.
    appendOwn(out, { key, input: bytesAtCall(`the input of member ${quoteValue(key)}`, input) });
  }
  return out;
}

const GROUP_OPTIONS_PATH = "the group's RunOptions";

/** @internal A group submission's options, each field read once into a copy (see `readRunOptions`). */
export function readGroupOptions(given: RunOptions | undefined): RunOptions | undefined {
  return readRunOptions(given, GROUP_OPTIONS_PATH) as RunOptions | undefined;
}

/** @internal Checks a group submission's options; what the manifest keeps of them. */
export function manifestOptions(given: RunOptions | undefined): ManifestOptions {
  // Each field read once: the options checked are those every member runs with.
  const o = readRunOptions(given, GROUP_OPTIONS_PATH) as RunOptions | undefined;
  const headers = checkUserHeaders(o?.headers, `${GROUP_OPTIONS_PATH}.headers`);
  const check = (name: string, n: number | undefined, min: number): void => {
    if (n !== undefined && (!Number.isInteger(n) || n < min))
      throw new ValidationError(`${GROUP_OPTIONS_PATH}.${name} must be an integer >= ${min}, got ${describeValue(n)}`);
  };
  check("priority", o?.priority, Number.MIN_SAFE_INTEGER);
  check("maxAttemptsPerStep", o?.maxAttemptsPerStep, 1);
  if (o?.runAt !== undefined) validateInstant(`${GROUP_OPTIONS_PATH}.runAt`, o.runAt);
  // Members share one set of options: with one debounce key, each would replace the one before.
  if (o?.debounce !== undefined)
    throw new ValidationError("a run group's members cannot be debounced (they would replace each other); submit the runs one by one");
  // Kept for every member and for `resume`: a job group's members obey their definition's flow rule.
  const flow = o?.flow;
  flowHeaders(flow, `${GROUP_OPTIONS_PATH}.flow`);
  return {
    headers,
    ...(o?.priority === undefined ? {} : { priority: o.priority }),
    ...(o?.maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep: o.maxAttemptsPerStep }),
    ...(flow === undefined
      ? {}
      : {
          flow: {
            rule: flow.rule,
            ...(flow.concurrencyKey === undefined ? {} : { concurrencyKey: flow.concurrencyKey }),
            ...(flow.rateKey === undefined ? {} : { rateKey: flow.rateKey }),
          },
        }),
  };
}

/** Runs `fn` over `items` with at most `limit` in flight; results in input order. */
async function mapPool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/** The run id of member `key` of the group tagged `tag` on `host`: routed to its shard on a sharded store. */
function hostRunId(host: GroupHost, tag: string, key: string): RunId {
  return routedOn(memberRunId(tag, key), host.placement);
}

/**
 * @internal A member record from its bytes `b` at `k`; where it does not
 * read, `GroupMemberDamagedError` naming the member's run as the record
 * still names it, else as `derived` (the group's host, routed to its shard)
 * gives it.
 */
export function decodeMemberNaming(b: Uint8Array, k: string, derived: () => string): GroupMemberRecord {
  try {
    return decodeGroupMember(b, k);
  } catch (e) {
    if (!(e instanceof StoreCorruptedError)) throw e;
    let named: unknown;
    try {
      named = (decodeValue(b) as Record<string, unknown> | null)?.["runId"];
    } catch {
      // Not even MessagePack: the run is the one the group and key derive.
    }
    throw new GroupMemberDamagedError(e.objectKey, e.detail, typeof named === "string" && RunId.isValid(named) ? named : derived());
  }
}

/** @internal A member's record, or null. */
export async function readMember(host: GroupHost, tag: string, key: string): Promise<GroupMemberRecord | null> {
  const k = groupMemberKey(host.queueName, tag, key);
  const b = await host.queue.kvGet(k);
  return b === null ? null : decodeMemberNaming(b, k, () => hostRunId(host, tag, key));
}

/** @internal Every member record of a group, by member key. */
export async function readMembers(host: GroupHost, tag: string): Promise<Map<string, GroupMemberRecord>> {
  const out = new Map<string, GroupMemberRecord>();
  let after: string | undefined;
  for (;;) {
    const page = await host.queue.kvScan(groupMembersPrefix(host.queueName, tag), { limit: 1000, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) {
      const r = decodeMemberNaming(e.value, e.key, () => hostRunId(host, tag, e.key.slice(groupMembersPrefix(host.queueName, tag).length)));
      out.set(r.key, r);
    }
    if (page.nextCursor === undefined) return out;
    after = page.nextCursor;
  }
}

/** @internal Reads a group's manifest, or null. */
export async function readManifest(host: GroupHost, tag: string): Promise<GroupManifest | null> {
  const key = manifestKey(host.memos.prefix, tag);
  const found = await host.memos.store.get(key);
  return found === null ? null : decodeManifest(found.body, key);
}

/**
 * Whether a group may be forgotten now: `true` when none of `members` is
 * active; else `false` with `ifIdle`, and `GroupActiveError` without.
 */
function idleOrRefused(groupId: string, members: Iterable<{ readonly state: string }>, ifIdle: boolean): boolean {
  let active = 0;
  for (const m of members) if (m.state === "active") active++;
  if (active === 0) return true;
  if (ifIdle) return false;
  throw new GroupActiveError(groupId, active);
}

/**
 * @internal Removes a group: per member its memo entries, terminal record,
 * the upper layers' state and its member record, then the manifest (last,
 * so an interrupted removal is finished by the next one). Refuses while a
 * member is active: with `ifIdle` by returning false, else by throwing.
 */
export async function forgetGroup(host: GroupHost, groupId: string, ifIdle: boolean): Promise<boolean> {
  const tag = groupTag(groupId);
  return host.manifestLock.run(tag, async () => {
    const manifest = await readManifest(host, tag);
    if (manifest === null) return false;
    const records = await readMembers(host, tag);
    if (!idleOrRefused(groupId, records.values(), ifIdle)) return false;
    await removeMembers(
      host,
      tag,
      manifest.members.map((m) => ({ key: m.key, runId: (records.get(m.key)?.runId as RunId | undefined) ?? hostRunId(host, tag, m.key) })),
    );
    await host.queue.kvDelete(groupIndexKey(host.queueName, manifest.createdAtMs, tag));
    await host.memos.store.delete(manifestKey(host.memos.prefix, tag));
    return true;
  });
}

/** Per member: its memo entries, terminal record, the upper layers' state, then its member record. */
async function removeMembers(host: GroupHost, tag: string, members: ReadonlyArray<{ key: string; runId: RunId }>): Promise<void> {
  await mapPool(members, SUBMIT_CONCURRENCY, async (m) => {
    await host.memos.clearMemosForRun(m.runId);
    await forgetTerminated(host, m.runId);
    for (const cleanup of host.memberCleanups) await cleanup(m.runId);
    await host.queue.kvDelete(groupMemberKey(host.queueName, tag, m.key));
  });
}

/** What one store keeps of a group spanning shards, as its forgetting names it. */
export interface GroupPart {
  /** The group's creation time (the manifest's), which dates its index entry on every shard. */
  readonly createdAtMs: number;
  /** Whether this store removes the manifest too (the group's home shard, last). */
  readonly manifest: boolean;
}

/**
 * @internal Removes this store's part of a group spanning shards: the
 * members whose records are here (as `forgetGroup` removes them), the
 * group's index entry here, and with `part.manifest` the manifest (the
 * caller removes it last, after every other part). Refuses while a member
 * here is active: with `ifIdle` by returning false, else by throwing.
 */
export async function forgetGroupPart(host: GroupHost, groupId: string, part: GroupPart, ifIdle: boolean): Promise<boolean> {
  const tag = groupTag(groupId);
  return host.manifestLock.run(tag, async () => {
    const records = [...(await readMembers(host, tag)).values()];
    if (!idleOrRefused(groupId, records, ifIdle)) return false;
    await removeMembers(
      host,
      tag,
      records.map((r) => ({ key: r.key, runId: r.runId as RunId })),
    );
    await host.queue.kvDelete(groupIndexKey(host.queueName, part.createdAtMs, tag));
    if (part.manifest) await host.memos.store.delete(manifestKey(host.memos.prefix, tag));
    return true;
  });
}

/** Removes a member run's terminal record with its index entries and history, in one commit. */
async function forgetTerminated(host: GroupHost, runId: RunId): Promise<void> {
  const tk = terminalRecordKey(host.queueName, runId);
  const t = await host.queue.kvGet(tk);
  if (t === null) return;
  const effects = new SettlementEffects().kvDelete(tk);
  await stageForgotten(host.queue, host.queueName, decodeTerminalRecord(t, tk), effects);
  await host.queue.kvCompareAndApply([{ key: tk, value: t }], effects);
}

/**
 * A durable set of runs, named by `WorkflowRuntime.group(id)`.
 *
 * @example
 * const group = runtime.group("import-2026-11-29");
 * await group.submit(files.map((f) => ({ key: f.name, input: f.bytes })));
 * for await (const r of group.results()) console.log(r.key, r.status);
 */
export class RunGroup {
  readonly #host: GroupHost;
  /** The group id. */
  readonly id: string;
  readonly #tag: string;

  /** @internal Use `WorkflowRuntime.group`. */
  constructor(host: GroupHost, id: string) {
    this.#host = host;
    this.id = checkText("a group id", id);
    this.#tag = groupTag(id);
  }

  /**
   * The run id of member `key` (derived from the group id and the key; on
   * a shard of a sharded store, suffixed so that clients route it to this
   * shard, where the member runs).
   */
  runIdOf(key: string): RunId {
    return hostRunId(this.#host, this.#tag, checkText("a member key", key));
  }

  /**
   * Adds `members` to the manifest and submits them. Idempotent: a member
   * that succeeded or is active is left alone, one that failed or was
   * cancelled runs again. A key already in the manifest with a different
   * input throws `InputMismatchError` before anything is written.
   */
  async submit(givenMembers: readonly GroupMember[], given?: RunOptions): Promise<GroupSubmitOutcome> {
    const members = checkMembers(givenMembers);
    // Each field read once: the options checked are those every member runs with.
    const options = readRunOptions(given, GROUP_OPTIONS_PATH) as RunOptions | undefined;
    const opts = manifestOptions(options);
    const createdAtMs = await this.#recordManifest(members, opts, options !== undefined);
    return this.#submitMembers(members, { ...opts, ...(options?.runAt === undefined ? {} : { runAt: options.runAt }) }, createdAtMs, true);
  }

  /**
   * Adds `members` to the manifest (checked as `submit` checks them) and
   * submits none: the home shard's part of a group that spans shards.
   * Returns the group's creation time, which every shard indexes it by.
   * Idempotent: the same members again change nothing.
   *
   * @internal Used by the client inbox of a sharded store.
   */
  async recordShardedManifest(givenMembers: readonly GroupMember[], options: RunOptions | undefined): Promise<number> {
    const members = checkMembers(givenMembers);
    return this.#recordManifest(members, manifestOptions(options), options !== undefined);
  }

  /**
   * Submits `members` on this store without reading or writing the
   * manifest (it lives with the group's home shard), indexed at
   * `createdAtMs`. A member with a record of any state is left alone, so
   * applying the same request twice never runs a member twice. Returns the
   * keys submitted now.
   *
   * @internal Used by the client inbox of a sharded store.
   */
  async submitShardMembers(givenMembers: readonly GroupMember[], options: RunOptions | undefined, createdAtMs: number): Promise<string[]> {
    const members = checkMembers(givenMembers);
    validateInstant("createdAtMs", createdAtMs);
    const opts = manifestOptions(options);
    const out = await this.#submitMembers(members, { ...opts, ...(options?.runAt === undefined ? {} : { runAt: options.runAt }) }, createdAtMs, false);
    return out.members.filter((m) => m.submission === "submitted").map((m) => m.key);
  }

  async #recordManifest(members: readonly GroupMember[], opts: ManifestOptions, optionsGiven: boolean): Promise<number> {
    const host = this.#host;
    let createdAtMs = 0;
    await host.manifestLock.run(this.#tag, async () => {
      const existing = await readManifest(host, this.#tag);
      if (existing !== null && existing.groupId !== this.id) {
        // 80-bit tags make this astronomically unlikely; refuse rather than mix two groups.
        throw new ValidationError(`group id "${this.id}" shares its storage tag with group "${existing.groupId}"; choose another group id`);
      }
      const byKey = new Map((existing?.members ?? []).map((m) => [m.key, m] as const));
      const added: ManifestMember[] = [];
      for (const m of members) {
        const had = byKey.get(m.key);
        if (had === undefined) appendOwn(added, { key: m.key, input: m.input });
        else if (!bytesEqual(had.input, m.input)) throw new InputMismatchError(hostRunId(this.#host, this.#tag, m.key));
      }
      checkGroupSize(this.id, existing?.members ?? [], added);
      createdAtMs = existing?.createdAtMs ?? host.clock.now();
      // Written before any member is submitted, so `resume` can finish an interrupted submission.
      if (existing === null || added.length > 0 || optionsGiven) {
        const manifest: GroupManifest = {
          groupId: this.id,
          createdAtMs,
          options: !optionsGiven && existing !== null ? existing.options : opts,
          members: [...(existing?.members ?? []), ...added],
        };
        await host.memos.store.put(manifestKey(host.memos.prefix, this.#tag), encodeManifest(manifest));
      }
    });
    return createdAtMs;
  }

  /** Runs again, from the manifest alone, every member that did not succeed and is not active. */
  async resume(): Promise<GroupSubmitOutcome> {
    const manifest = await readManifest(this.#host, this.#tag);
    if (manifest === null) throw new GroupNotFoundError(this.id);
    return this.#submitMembers(manifest.members, manifest.options, manifest.createdAtMs, true);
  }

  /** Submits `members`; with `rerun`, one that failed or was cancelled runs again, without, a member with any record is left alone. */
  async #submitMembers(members: readonly GroupMember[], options: RunOptions, createdAtMs: number, rerun: true): Promise<GroupSubmitOutcome>;
  async #submitMembers(members: readonly GroupMember[], options: RunOptions, createdAtMs: number, rerun: false): Promise<LeftAloneOutcome>;
  async #submitMembers(
    members: readonly GroupMember[],
    options: RunOptions,
    createdAtMs: number,
    rerun: boolean,
  ): Promise<GroupSubmitOutcome | LeftAloneOutcome> {
    const host = this.#host;
    // Listed before its members exist, so a listing never misses a group with members.
    await host.queue.kvPut(groupIndexKey(host.queueName, createdAtMs, this.#tag), encodeGroupIndexEntry(this.id));
    const out = await mapPool(members, SUBMIT_CONCURRENCY, async (m) => {
      const runId = hostRunId(this.#host, this.#tag, m.key);
      // Read and submit under the member's lock: a concurrent submission of the same member could
      // otherwise start, finish and be submitted again between this read and this submission.
      return host.manifestLock.run(`member:${runId}`, async () => {
        const rec = await readMember(host, this.#tag, m.key);
        // Only a member that is not active is resubmitted, so no termination races this decision.
        if (rec?.state === "succeeded" || rec?.state === "active") return { key: m.key, runId, submission: rec.state };
        if (rec !== null && !rerun) return { key: m.key, runId, submission: "ended" as const };
        const r = await host.submitMember(this.#tag, m.key, { runId, input: m.input, options }, this.id);
        return { key: m.key, runId, submission: r.newlySubmitted ? ("submitted" as const) : ("active" as const) };
      });
    });
    return { groupId: this.id, submitted: out.filter((m) => m.submission === "submitted").length, members: out };
  }

  /** The member keys in submission order; empty for a group with no manifest. */
  async keys(): Promise<string[]> {
    return (await readManifest(this.#host, this.#tag))?.members.map((m) => m.key) ?? [];
  }

  /** Requests cancellation of every active member; returns how many requests were recorded. */
  async cancel(): Promise<number> {
    const manifest = await readManifest(this.#host, this.#tag);
    if (manifest === null) return 0;
    const records = await readMembers(this.#host, this.#tag);
    const active = manifest.members.filter((m) => records.get(m.key)?.state === "active");
    const done = await mapPool(active, SUBMIT_CONCURRENCY, (m) => this.#host.cancel(hostRunId(this.#host, this.#tag, m.key)));
    return done.filter(Boolean).length;
  }

  /** Counts the members by state; `null` for a group with no manifest. */
  async status(): Promise<GroupStatus | null> {
    const host = this.#host;
    const manifest = await readManifest(host, this.#tag);
    if (manifest === null) return null;
    const records = await readMembers(host, this.#tag);
    const c = { total: manifest.members.length, unsubmitted: 0, pending: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
    const active: ManifestMember[] = [];
    for (const m of manifest.members) {
      const r = records.get(m.key);
      if (r === undefined) c.unsubmitted++;
      else if (r.state === "active") active.push(m);
      else c[r.state]++;
    }
    const states = await mapPool(active, SUBMIT_CONCURRENCY, async (m) => (await host.view.status(hostRunId(this.#host, this.#tag, m.key)))?.state);
    for (const s of states) {
      if (s === "pending") c.pending++;
      else if (s === "terminated")
        c.running++; // terminated between the two reads: still counted once
      else c.running++;
    }
    return c;
  }

  /**
   * Yields each member's result as it terminates: first those terminated
   * already, then the rest as their terminating settlements commit. Wakes on
   * the runtime's in-process termination announcements; terminations by
   * another process are noticed within the poll interval. Ends when every
   * member of the manifest (as read at the start) terminated; with group
   * retention, that starts the group's removal window.
   */
  async *results(): AsyncGenerator<MemberResult, void, undefined> {
    const host = this.#host;
    const manifest = await readManifest(host, this.#tag);
    if (manifest === null) throw new GroupNotFoundError(this.id);
    const pending = new Map<string, RunId>(manifest.members.map((m) => [m.key, hostRunId(this.#host, this.#tag, m.key)]));
    const woken = new Set<string>();
    const subs = new Map<string, () => void>();
    let wake: () => void = () => undefined;
    const arm = (key: string, runId: RunId): void => {
      const s = host.events.next(runId);
      subs.set(key, () => s.dispose());
      void s.promise.then(() => {
        subs.delete(key);
        woken.add(key);
        wake();
      });
    };
    // Subscribe before the first read, so a termination in between is not missed.
    for (const [key, runId] of pending) arm(key, runId);
    try {
      let full = true;
      while (pending.size > 0) {
        let records: Map<string, GroupMemberRecord | null>;
        if (full) {
          records = await readMembers(host, this.#tag);
        } else {
          records = new Map();
          const keys = [...woken].filter((k) => pending.has(k));
          woken.clear();
          for (const k of keys) records.set(k, await readMember(host, this.#tag, k));
        }
        for (const [key, rec] of records) {
          const runId = pending.get(key);
          if (runId === undefined) continue;
          if (rec === null || rec.state === "active") {
            if (!subs.has(key)) arm(key, runId);
            continue;
          }
          pending.delete(key);
          subs.get(key)?.();
          subs.delete(key);
          const outcome = await host.view.outcome(runId);
          yield {
            key,
            runId,
            status: rec.state,
            ...(rec.error === undefined ? {} : { error: rec.error }),
            ...(rec.errorKind === undefined ? {} : { errorKind: rec.errorKind }),
            ...(rec.terminatedAtMs === undefined ? {} : { terminatedAtMs: rec.terminatedAtMs }),
            ...(outcome === null ? {} : { outcome }),
          };
        }
        if (pending.size === 0) break;
        // A closed queue or failed engine ends the stream: nothing more can terminate in this process.
        const closed = host.events.closedError;
        if (closed !== undefined) throw closed;
        if (woken.size > 0) {
          full = false;
          continue;
        }
        const stop = new AbortController();
        const woke = new Promise<"wake">((resolve) => (wake = () => resolve("wake")));
        const polled = host.clock.waitUntil(host.clock.now() + host.pollIntervalMs, stop.signal).then(
          () => "poll" as const,
          () => "poll" as const,
        );
        full = (await Promise.race([woke, polled])) === "poll";
        stop.abort();
        wake = () => undefined;
      }
      if (host.retentionMs !== undefined) {
        const at = host.clock.now() + host.retentionMs;
        await host.queue.kvPut(groupTerminalMarkers(host.queueName).key(at, this.#tag), utf8(this.id));
      }
    } finally {
      for (const dispose of subs.values()) dispose();
    }
  }

  /**
   * Removes this store's part of a group spanning shards (see
   * `forgetGroupPart`); throws `GroupActiveError` while a member here is
   * active.
   *
   * @internal Used by the client inbox of a sharded store.
   */
  async forgetShardPart(part: GroupPart): Promise<boolean> {
    validateInstant("createdAtMs", part?.createdAtMs);
    return await forgetGroupPart(this.#host, this.id, part, false);
  }

  /**
   * Starts the removal window of this store's part of a group spanning
   * shards, when this runtime retains groups (`groupRetention`): the sweep
   * at its end removes the part as `forgetShardPart` does (unless a member
   * here is active then). Returns whether a window started.
   *
   * @internal Used by the client inbox of a sharded store, once a client read every result.
   */
  async retainShardPart(part: GroupPart): Promise<boolean> {
    validateInstant("createdAtMs", part?.createdAtMs);
    const host = this.#host;
    if (host.retentionMs === undefined) return false;
    const at = host.clock.now() + host.retentionMs;
    await host.queue.kvPut(groupTerminalMarkers(host.queueName).key(at, this.#tag), encodeRetainedPart(this.id, part));
    return true;
  }

  /**
   * Removes the group: its manifest, member records, and the members' memo
   * entries and terminal records. Throws `GroupActiveError` while a member
   * is active. Returns false when the group had no manifest.
   */
  forget(): Promise<boolean> {
    return forgetGroup(this.#host, this.id, false);
  }
}
