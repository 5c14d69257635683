/**
 * @module Run groups and job groups through `TaqubaClient`, on one store or
 * across the shards of a sharded one.
 *
 * Where a group lives:
 * - its **manifest** (member keys, inputs, options, creation time) is the
 *   one object the runtime keeps for a group in the memo store; on a
 *   sharded store the owner of the group's **home shard**
 *   (`fnv1a(groupId) mod S`) alone writes it, so two writers never race;
 * - each **member** is a run on the shard of its run id (derived from the
 *   group id and the key), submitted there with its member record and
 *   that shard's group index entry (dated with the manifest's creation
 *   time, so every shard lists the group at one place). A member's
 *   termination rewrites its record in the same commit, on its shard.
 *
 * Submitting writes the manifest first (one request to the home shard),
 * then one request per shard with that shard's members. A client that
 * dies in between leaves members in the manifest unsubmitted: `status`
 * counts them, `resume` submits them. A shard applies its request exactly
 * once: each member is submitted with its record in one commit, and a
 * replay after the owner crashed leaves every member with a record alone.
 *
 * Reading needs no owner: status and results read the manifest and every
 * shard's member records, and `results` streams each member as its shard
 * commits its end.
 */
import { ConstructionGate } from "../internal-construction.js";
import { ValidationError } from "../errors.js";
import type { HeaderValues, JobDefinition, JobOutcome } from "../contract/job-definition.js";
import type { JobGroupSubmitOptions, JobMemberResult } from "../jobs/job-group.js";
import type { JobSubmitOptions } from "../contract/job-definition.js";
import type { ResolvedOutcome } from "../jobs/job-results.js";
import { prepareGroupSubmission, type AnyDefinition } from "../jobs/job-submission.js";
import { GroupActiveError, GroupNotFoundError } from "../workflow/groups/group-errors.js";
import { groupMembersPrefix, groupTag, manifestKey, memberRunId } from "../workflow/groups/group-keys.js";
import { decodeManifest, type GroupManifest } from "../workflow/groups/group-records.js";
import {
  checkMembers,
  checkText,
  manifestOptions,
  readGroupOptions,
  type GroupMember,
  type GroupStatus,
  type MemberResult,
} from "../workflow/groups/run-group.js";
import type { MemoStore } from "../workflow/memo/memo.js";
import { decodeGroupMember, type GroupMemberRecord } from "../workflow/records/records.js";
import type { RunId } from "../workflow/runs/run-id.js";
import type { RunOptions, RunOutcome, RunStatus } from "../workflow/runs/run-types.js";
import type { AnswerValue, InboxRequest } from "./request-codec.js";
import { onceRequestId } from "./inbox-layout.js";
import { checkGroupSize } from "../workflow/limits.js";

/** `new ClientGroup` is internal: use client.group(id) (see internal-construction.ts). */
export const GROUP_GATE = new ConstructionGate("ClientGroup", "use client.group(id)");

/** `new ClientJobGroup` is internal: use client.jobGroup(id, definition) (see internal-construction.ts). */
export const JOB_GROUP_GATE = new ConstructionGate("ClientJobGroup", "use client.jobGroup(id, definition)");

/** @internal What a client group needs of its `TaqubaClient`, per shard (one on an unsharded store). */
export interface GroupPort {
  readonly shards: number;
  readonly queueName: string;
  readonly memos: MemoStore;
  readonly pollMs: number;
  shardOfRun(runId: string): number;
  homeOf(groupId: string): number;
  request(shard: number, request: InboxRequest, what: string): Promise<AnswerValue>;
  /** Writes `request` into `shard`'s inbox without waiting for the answer (the owner applies it when it runs). */
  post(shard: number, request: InboxRequest): Promise<unknown>;
  /** Posts `request` unless one with the same `onceId` still waits in that shard's inbox. */
  postOnce(shard: number, request: InboxRequest, onceId: string): Promise<unknown>;
  /** Every member record under `prefix` on `shard`, as of its owner's last commit. */
  scan(shard: number, prefix: string): Promise<Array<{ key: string; value: Uint8Array }>>;
  /** A member run's status, outcome or job outcome, read on its shard as of that shard's last `scan`. */
  status(runId: string): Promise<RunStatus | null>;
  outcome(runId: string): Promise<RunOutcome | null>;
  jobOutcome(runId: string): Promise<ResolvedOutcome<unknown, unknown> | "active" | "unknown">;
  cancel(runId: string): Promise<boolean>;
  /** Resolves on the next change any shard notifies, or after `ms`. */
  pause(ms: number): Promise<void>;
  checkOpen(): void;
}

/** A member record and the shard it was read on. */
type PlacedRecord = GroupMemberRecord & { readonly runId: RunId; readonly shard: number };

/** What a client group's `submit` or `resume` did with one member. */
export type ClientMemberSubmission = "submitted" | "existing";

/** What `ClientGroup.submit` and `resume` report. */
export interface ClientGroupSubmitOutcome {
  readonly groupId: string;
  /** Members whose run was submitted now. */
  readonly submitted: number;
  /** Per member of the call: submitted now, or left alone because it had a run already (active or ended). */
  readonly members: ReadonlyArray<{ readonly key: string; readonly runId: RunId; readonly submission: ClientMemberSubmission }>;
}

/** One member as `ClientGroup.members` lists it. */
export interface ClientGroupMember {
  readonly key: string;
  readonly runId: RunId;
  /** The shard its run lives on (0 on an unsharded store). */
  readonly shard: number;
  /** `unsubmitted` while it is in the manifest on no shard; `pending` or `running` while active. */
  readonly state: "unsubmitted" | "pending" | "running" | "succeeded" | "failed" | "cancelled";
  readonly error?: string;
  readonly terminatedAtMs?: number;
}

/**
 * A run group reached through `TaqubaClient.group(id)`: its members may be
 * on every shard of a sharded store. See the module documentation.
 *
 * Unlike `RunGroup.submit`, submitting again leaves a member that failed
 * or was cancelled alone (so a replayed request never runs a member
 * twice); run one again with `TaqubaClient.retryRun(group.runIdOf(key))`.
 *
 * @example
 * const group = client.group("import-2026-12-01");
 * await group.submit(files.map((f) => ({ key: f.name, input: f.bytes })));
 * for await (const r of group.results()) console.log(r.key, r.status);
 */
export class ClientGroup {
  readonly #port: GroupPort;
  /** The group id. */
  readonly id: string;
  readonly #tag: string;

  /** @internal Use `TaqubaClient.group`. */
  constructor(port: GroupPort, id: string) {
    GROUP_GATE.check();
    this.#port = port;
    this.id = checkText("a group id", id);
    this.#tag = groupTag(id);
  }

  /** The run id of member `key` (derived from the group id and the key, as `RunGroup.runIdOf`). */
  runIdOf(key: string): RunId {
    return memberRunId(this.#tag, checkText("a member key", key));
  }

  /** The shard member `key` runs on (0 on an unsharded store). */
  shardOf(key: string): number {
    return this.#port.shardOfRun(this.runIdOf(key));
  }

  /**
   * Adds `members` to the group's manifest (through the home shard's
   * owner), then submits each on its shard. Idempotent: a member that has
   * a run already is left alone. A key already in the manifest with
   * another input is an `InputMismatchError` before any member is
   * submitted; invalid members or options are refused before anything is
   * written.
   */
  async submit(givenMembers: readonly GroupMember[], given?: RunOptions): Promise<ClientGroupSubmitOutcome> {
    this.#port.checkOpen();
    const members = checkMembers(givenMembers);
    // Each field read once: the options checked are those sent.
    const options = readGroupOptions(given);
    manifestOptions(options);
    checkGroupSize(this.id, [], members);
    const list = members.map((m) => ({ key: m.key, input: m.input }));
    const manifestOpts = options === undefined ? {} : { options: { ...manifestOptions(options) } };
    const createdAtMs = (await this.#port.request(
      this.#port.homeOf(this.id),
      { op: "groupManifest", groupId: this.id, members: list, ...manifestOpts },
      `manifest of group "${this.id}"`,
    )) as number;
    return this.#submitMembers(list, options, createdAtMs);
  }

  /** Submits every member of the manifest that has no run yet (after a submission cut short); `GroupNotFoundError` without a manifest. */
  async resume(): Promise<ClientGroupSubmitOutcome> {
    const manifest = await this.#manifest();
    if (manifest === null) throw new GroupNotFoundError(this.id);
    const { headers, priority, maxAttemptsPerStep, flow } = manifest.options;
    const options: RunOptions = {
      headers,
      ...(priority === undefined ? {} : { priority }),
      ...(maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep }),
      ...(flow === undefined ? {} : { flow }),
    };
    return this.#submitMembers(manifest.members, options, manifest.createdAtMs);
  }

  async #submitMembers(members: readonly GroupMember[], options: RunOptions | undefined, createdAtMs: number): Promise<ClientGroupSubmitOutcome> {
    const byShard = new Map<number, GroupMember[]>();
    for (const m of members) {
      const s = this.#port.shardOfRun(memberRunId(this.#tag, m.key));
      byShard.set(s, [...(byShard.get(s) ?? []), m]);
    }
    const submitted = new Set<string>();
    await Promise.all(
      [...byShard].map(async ([shard, part]) => {
        const keys = (await this.#port.request(
          shard,
          { op: "groupMembers", groupId: this.id, createdAtMs, members: part, ...(options === undefined ? {} : { options }) },
          `submission of ${part.length} member(s) of group "${this.id}"`,
        )) as readonly string[];
        for (const k of keys) submitted.add(k);
      }),
    );
    return {
      groupId: this.id,
      submitted: submitted.size,
      members: members.map((m) => ({ key: m.key, runId: memberRunId(this.#tag, m.key), submission: submitted.has(m.key) ? "submitted" : "existing" })),
    };
  }

  async #manifest(): Promise<GroupManifest | null> {
    this.#port.checkOpen();
    const key = manifestKey(this.#port.memos.prefix, this.#tag);
    const got = await this.#port.memos.store.get(key);
    return got === null ? null : decodeManifest(got.body, key);
  }

  /**
   * Every member record of the group, from every shard, with the shard it
   * was read on: a member of a group a shard's runtime drives
   * (`runtime.group`) runs on that shard, under the run id its record names.
   */
  async #records(shards: Iterable<number>): Promise<Map<string, PlacedRecord>> {
    const prefix = groupMembersPrefix(this.#port.queueName, this.#tag);
    const out = new Map<string, PlacedRecord>();
    const list = [...shards];
    const pages = await Promise.all(list.map((s) => this.#port.scan(s, prefix)));
    for (const [i, entries] of pages.entries()) {
      for (const e of entries) {
        const r = decodeGroupMember(e.value, e.key);
        out.set(r.key, { ...r, runId: r.runId as RunId, shard: list[i]! });
      }
    }
    return out;
  }

  #allShards(): number[] {
    return Array.from({ length: this.#port.shards }, (_, i) => i);
  }

  /** The member keys in submission order; empty for a group with no manifest. */
  async keys(): Promise<string[]> {
    return (await this.#manifest())?.members.map((m) => m.key) ?? [];
  }

  /**
   * The members in manifest order with their state, read from every shard
   * (one LIST of member records per shard, one status read per active
   * member); null for a group with no manifest.
   */
  async members(): Promise<ClientGroupMember[] | null> {
    const manifest = await this.#manifest();
    if (manifest === null) return null;
    const records = await this.#records(this.#allShards());
    return Promise.all(
      manifest.members.map(async (m): Promise<ClientGroupMember> => {
        const r = records.get(m.key);
        if (r === undefined) {
          const runId = memberRunId(this.#tag, m.key);
          return { key: m.key, runId, shard: this.#port.shardOfRun(runId), state: "unsubmitted" };
        }
        const { runId, shard } = r;
        if (r.state === "active") {
          const s = await this.#port.status(runId);
          return { key: m.key, runId, shard, state: s?.state === "pending" ? "pending" : "running" };
        }
        return {
          key: m.key,
          runId,
          shard,
          state: r.state,
          ...(r.error === undefined ? {} : { error: r.error }),
          ...(r.terminatedAtMs === undefined ? {} : { terminatedAtMs: r.terminatedAtMs }),
        };
      }),
    );
  }

  /** Counts the members by state over every shard; null for a group with no manifest. */
  async status(): Promise<GroupStatus | null> {
    const manifest = await this.#manifest();
    if (manifest === null) return null;
    const records = await this.#records(this.#allShards());
    const c = { total: manifest.members.length, unsubmitted: 0, pending: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
    const active: RunId[] = [];
    for (const m of manifest.members) {
      const r = records.get(m.key);
      if (r === undefined) c.unsubmitted++;
      else if (r.state === "active") active.push(r.runId);
      else c[r.state]++;
    }
    const states = await Promise.all(active.map(async (runId) => (await this.#port.status(runId))?.state));
    for (const s of states) {
      if (s === "pending") c.pending++;
      else c.running++; // claimed, cancelling, or ended between the two reads: counted once
    }
    return c;
  }

  /**
   * Yields each member's result as it ends, from every shard: first those
   * ended already, then the rest as their shards commit their ends. Wakes
   * on change notifications of a local directory, else polls once per poll
   * interval every shard holding unfinished members (one LIST of its
   * member records), and every shard while a member has no record yet (so
   * it is found wherever it runs). Ends when every member of the manifest
   * (as read at the start) ended. `GroupNotFoundError` without a manifest.
   */
  async *results(): AsyncGenerator<MemberResult, void, undefined> {
    const manifest = await this.#manifest();
    if (manifest === null) throw new GroupNotFoundError(this.id);
    // Where each member runs is known once its record is read; until then every shard is read.
    const pending = new Map<string, { runId: RunId; shard: number } | undefined>(manifest.members.map((m) => [m.key, undefined]));
    const shardsRead = new Set<number>();
    while (pending.size > 0) {
      const placed = [...pending.values()];
      const shards = placed.includes(undefined) ? this.#allShards() : new Set(placed.map((p) => p!.shard));
      const records = await this.#records(shards);
      let ended = 0;
      for (const key of [...pending.keys()]) {
        const rec = records.get(key);
        if (rec === undefined) continue;
        shardsRead.add(rec.shard);
        if (rec.state === "active") {
          pending.set(key, { runId: rec.runId, shard: rec.shard });
          continue;
        }
        pending.delete(key);
        ended++;
        const outcome = await this.#port.outcome(rec.runId);
        yield {
          key,
          runId: rec.runId,
          status: rec.state,
          ...(rec.error === undefined ? {} : { error: rec.error }),
          ...(rec.errorKind === undefined ? {} : { errorKind: rec.errorKind }),
          ...(rec.terminatedAtMs === undefined ? {} : { terminatedAtMs: rec.terminatedAtMs }),
          ...(outcome === null ? {} : { outcome }),
        };
      }
      if (pending.size > 0 && ended === 0) await this.#port.pause(this.#port.pollMs);
    }
    // Every member ended: each part's owner starts its removal window if its runtime retains groups.
    // One request per group and shard at most waits in an inbox, however often the group is read
    // to its end: an owner that does not serve clients yet would otherwise collect one per read.
    const once = onceRequestId(manifest.createdAtMs, `groupRetain\n${this.id}`);
    await this.#eachPart(manifest, shardsRead, (shard, home) =>
      once === undefined
        ? this.#port.post(shard, { op: "groupRetain", groupId: this.id, createdAtMs: manifest.createdAtMs, manifest: home })
        : this.#port.postOnce(shard, { op: "groupRetain", groupId: this.id, createdAtMs: manifest.createdAtMs, manifest: home }, once),
    );
  }

  /**
   * Calls `fn` for every shard that may hold a part of the group (members'
   * records or its index entry), then for the home shard (`home` true),
   * which keeps the manifest.
   */
  async #eachPart(manifest: GroupManifest, shardsRead: ReadonlySet<number>, fn: (shard: number, home: boolean) => Promise<unknown>): Promise<void> {
    const home = this.#port.homeOf(this.id);
    const shards = new Set(shardsRead);
    for (const m of manifest.members) shards.add(this.#port.shardOfRun(memberRunId(this.#tag, m.key)));
    shards.delete(home);
    await Promise.all([...shards].map((s) => fn(s, false)));
    await fn(home, true);
  }

  /**
   * Removes the group from every shard: each member's records (its run's
   * terminal record, history, results and memo entries), its index
   * entries, then the manifest (last, so a removal cut short is finished
   * by calling again). `GroupActiveError`, before anything is removed,
   * while a member is active; false for a group with no manifest. A member
   * resumed while the removal runs makes its shard refuse, with
   * `GroupActiveError`, and the removal stops there (call again once it
   * ended).
   */
  async forget(): Promise<boolean> {
    const manifest = await this.#manifest();
    if (manifest === null) return false;
    const records = await this.#records(this.#allShards());
    const active = [...records.values()].filter((r) => r.state === "active").length;
    if (active > 0) throw new GroupActiveError(this.id, active);
    const shardsRead = new Set([...records.values()].map((r) => r.shard));
    await this.#eachPart(manifest, shardsRead, (shard, home) =>
      this.#port.request(
        shard,
        { op: "groupForget", groupId: this.id, createdAtMs: manifest.createdAtMs, manifest: home },
        `removal of group "${this.id}" from shard ${shard}`,
      ),
    );
    return true;
  }

  /** Waits for every member and returns the results in manifest order. */
  async join(): Promise<MemberResult[]> {
    const byKey = new Map<string, MemberResult>();
    for await (const r of this.results()) byKey.set(r.key, r);
    return (await this.keys()).flatMap((k) => byKey.get(k) ?? []);
  }

  /** Requests cancellation of every active member, each through its shard's owner; how many were recorded. */
  async cancel(): Promise<number> {
    const manifest = await this.#manifest();
    if (manifest === null) return 0;
    const records = await this.#records(this.#allShards());
    const active = manifest.members.flatMap((m) => {
      const r = records.get(m.key);
      return r?.state === "active" ? [r.runId] : [];
    });
    const done = await Promise.all(active.map((runId) => this.#port.cancel(runId)));
    return done.filter(Boolean).length;
  }
}

/**
 * A job group reached through `TaqubaClient.jobGroup(id, definition)`: the
 * jobs of one definition, on every shard. Members are keyed as
 * `JobGroup` keys them (the definition's idempotency key, else `item-{i}`).
 */
export class ClientJobGroup<Input, Output, Err, Headers extends HeaderValues> {
  readonly #group: ClientGroup;
  readonly #def: JobDefinition<string, Input, Output, Err, Headers>;
  readonly #port: GroupPort;

  /** @internal Use `TaqubaClient.jobGroup`. */
  constructor(port: GroupPort, id: string, definition: JobDefinition<string, Input, Output, Err, Headers>) {
    JOB_GROUP_GATE.check();
    if (definition === null || typeof definition !== "object" || (definition as { kind?: unknown }).kind !== "job") {
      throw new ValidationError("jobGroup takes a group id and a job definition (defineJob)");
    }
    this.#port = port;
    this.#group = GROUP_GATE.build(() => new ClientGroup(port, id));
    this.#def = definition;
  }

  get id(): string {
    return this.#group.id;
  }

  /** The member key of item `index` of a submission with `input`. */
  keyOf(input: Input, index: number): string {
    return this.#def.idempotencyKey?.(input) ?? `item-${index}`;
  }

  /** The job id (run id) of member `key`. */
  jobIdOf(key: string): RunId {
    return this.#group.runIdOf(key);
  }

  /** Validates every input and the options (nothing is written when one is invalid), then submits the jobs. */
  async submit(inputs: readonly Input[], options?: JobGroupSubmitOptions<Headers>): Promise<ClientGroupSubmitOutcome> {
    const { members, runOptions } = prepareGroupSubmission(
      this.#def as unknown as AnyDefinition,
      inputs,
      options as JobSubmitOptions<HeaderValues> | undefined,
      (input, i) => this.keyOf(input as Input, i),
    );
    return this.#group.submit(members, runOptions);
  }

  /** Submits every job of the manifest that has no run yet. */
  resume(): Promise<ClientGroupSubmitOutcome> {
    return this.#group.resume();
  }

  /** Yields each job's result as it ends, from every shard. */
  async *results(): AsyncGenerator<JobMemberResult<Output, Err>, void, undefined> {
    for await (const m of this.#group.results()) {
      const r = await this.#port.jobOutcome(m.runId);
      if (r === "active" || r === "unknown") {
        yield {
          key: m.key,
          jobId: m.runId,
          outcome: { status: "failed", error: undefined, message: "the job's records were removed" } as JobOutcome<Output, Err>,
        };
        continue;
      }
      yield { key: m.key, jobId: m.runId, outcome: r.outcome as JobOutcome<Output, Err>, ...(r.kind === undefined ? {} : { kind: r.kind }) };
    }
  }

  /** Waits for every job and returns the results in submission order. */
  async join(): Promise<Array<JobMemberResult<Output, Err>>> {
    const byKey = new Map<string, JobMemberResult<Output, Err>>();
    for await (const r of this.results()) byKey.set(r.key, r);
    return (await this.#group.keys()).flatMap((k) => byKey.get(k) ?? []);
  }

  status(): Promise<GroupStatus | null> {
    return this.#group.status();
  }

  cancel(): Promise<number> {
    return this.#group.cancel();
  }

  keys(): Promise<string[]> {
    return this.#group.keys();
  }

  /** Removes the group from every shard, with its jobs' records and results (see `ClientGroup.forget`). */
  forget(): Promise<boolean> {
    return this.#group.forget();
  }
}
