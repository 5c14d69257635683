/**
 * @module Submitting a run: step 0 and the durable run record in one commit.
 */
import { validateInstant } from "../../time-bounds.js";
import { isPositiveCount } from "../../value-ranges.js";
import { SettlementEffects, withStagedKvOps } from "../../queue/effects.js";
import type { EnqueueOptions } from "../../queue/types.js";
import type { KvExpectation } from "../../queue/kv-ops.js";
import { markEffects, type AppliedMark } from "../records/applied-mark.js";
import { sha256Hex } from "../records/codec.js";
import { stageCommitOnly } from "../records/commit-bytes.js";
import { groupMemberKey, runKey, stepDedupKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";
import {
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeGroupMember,
  runRecordForCommit,
  stepPointerForCommit,
  type GroupRef,
  type ParentRef,
  type RunRecord,
} from "../records/records.js";
import { HEADER_RUN_ID, HEADER_STEP, HEADER_TRACEPARENT, RESERVED_HEADER_PREFIX, RESERVED_KV_PREFIX } from "../records/reserved.js";
import { endOk, endWithError, startSpan, traceparentOf, tracing } from "../../telemetry/tracing.js";
import { instruments } from "../../telemetry/metrics.js";
import { RunId } from "./run-id.js";
import { routedOn } from "./shard-placement.js";
import type { RunFlow, RunOptions, RunSpec, SubmitOutcome } from "./run-types.js";
import { FLOW_CONCURRENCY_KEY_HEADER, FLOW_CONCURRENCY_LIMIT_HEADER, FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER } from "../../queue/admission.js";
import type { RuntimeCore } from "../runtime-core.js";
import { InputMismatchError, ReservedHeaderError, ReservedKeyError, RunIdDrawsTakenError } from "../workflow-errors.js";
import { ClosedError, ValidationError } from "../../errors.js";
import { bytesAtCall } from "../bytes-at-call.js";
import { checkRunHeaders, checkRunPayload, MAX_RUN_PAYLOAD_BYTES } from "../limits.js";
import { copyOwned } from "../../queue/owned-bytes.js";
import { describePayload, stageForgotten, stageSubmission } from "./index-effects.js";
import { checkRunDebounce, supersessionOf } from "./debounce.js";
import { drawnIdTaken } from "./drawn-job-id.js";
import { jobIdOfTermination } from "./end-tokens.js";
import { drawnIdOptions, drawnStepOptions } from "../../queue/validate-enqueue.js";
import { setOwn } from "../../own-fields.js";
import { drawRunIdentity } from "./drawn-identity.js";
import { type Building } from "../../queue/cancel-state.js";
import { blankCopy, callerField, describeValue, isOptionObject, NO_OPTIONS, ownHeader } from "../../option-values.js";
import { readRunSpec, refuseUnknownRunOptionFields, refuseUnknownRunSpecFields } from "./run-option-fields.js";

/** Checks user headers: string values, no reserved prefix; `what` names them as the caller wrote them. */
export function checkUserHeaders(headers: Readonly<Record<string, string>> | undefined, what = "RunOptions.headers"): Record<string, string> {
  if (headers === undefined) return {};
  // Names, sizes and `__proto__` first: a header the record could not carry is refused, never dropped.
  // The copy as checked (each value read once) is what the run carries, not a second read of the caller's object.
  return refuseReservedHeaders(checkRunHeaders(headers, what));
}

/** `headers` (a copy `checkRunHeaders` made) unless one of its names has the reserved prefix: `ReservedHeaderError` then. */
function refuseReservedHeaders(headers: Record<string, string>): Record<string, string> {
  for (const k in headers) if (k.startsWith(RESERVED_HEADER_PREFIX)) throw new ReservedHeaderError(k);
  return headers;
}

/**
 * The submitter's headers of a step job: every header except the reserved
 * ones, the job's own only. The copy inherits nothing (see `blankCopy`): a
 * name set on `Object.prototype` is no header of it, and a `__proto__`
 * name is a header like any other rather than the copy's prototype.
 */
export function userHeadersOf(jobHeaders: Readonly<Record<string, string>>): Record<string, string> {
  const out = blankCopy<Record<string, string>>();
  // Own keys in `Object.entries` order, without its array of pairs.
  for (const k in jobHeaders) if (Object.hasOwn(jobHeaders, k) && !k.startsWith(RESERVED_HEADER_PREFIX)) out[k] = jobHeaders[k]!;
  return out;
}

/** The headers that carry a run's flow, in the order a step's headers list them. */
export const FLOW_HEADER_NAMES = [FLOW_RULE_HEADER, FLOW_CONCURRENCY_KEY_HEADER, FLOW_RATE_KEY_HEADER, FLOW_CONCURRENCY_LIMIT_HEADER] as const;

/**
 * What every flow header's name starts with (the rule's name is the prefix of the others): a step
 * whose headers have no name starting with it has no flow headers. A test checks the names.
 */
export const FLOW_HEADER_PREFIX = FLOW_RULE_HEADER;

/** The step headers that carry `RunOptions.flow` (`path` names it as the caller wrote it); throws `ValidationError` when it is malformed. */
export function flowHeaders(flow: RunFlow | undefined, path = "RunOptions.flow"): Record<string, string> {
  if (flow === undefined) return {};
  if (!isOptionObject(flow)) throw new ValidationError(`${path} must be an object { rule, concurrencyKey?, rateKey? }, got ${describeValue(flow)}`);
  const text = (what: string, v: unknown, min: number) => {
    if (typeof v !== "string" || v.length < min || v.length > 512) {
      throw new ValidationError(`${path}.${what} must be a string of ${min} to 512 characters, got ${describeValue(v)}`);
    }
    return v;
  };
  // The caller's fields only (see `callerField`): a key set on Object.prototype would put every run under one.
  const out: Record<string, string> = { [FLOW_RULE_HEADER]: text("rule", callerField(flow, "rule", `${path}.rule`), 1) };
  const concurrencyKey = callerField(flow, "concurrencyKey", `${path}.concurrencyKey`);
  if (concurrencyKey !== undefined) out[FLOW_CONCURRENCY_KEY_HEADER] = text("concurrencyKey", concurrencyKey, 0);
  const rateKey = callerField(flow, "rateKey", `${path}.rateKey`);
  if (rateKey !== undefined) out[FLOW_RATE_KEY_HEADER] = text("rateKey", rateKey, 0);
  return out;
}

/**
 * The flow-control headers of a step job, which every next step of its run
 * carries too: the job's own only, in a copy that inherits nothing (see
 * `blankCopy`), so a `for...in` over it or a lookup of a name it lacks does
 * not reach a header name set on `Object.prototype`.
 */
export function flowHeadersOf(jobHeaders: Readonly<Record<string, string>>): Record<string, string> {
  const out = blankCopy<Record<string, string>>();
  for (const h of FLOW_HEADER_NAMES) {
    if (Object.hasOwn(jobHeaders, h)) out[h] = jobHeaders[h]!;
  }
  return out;
}

/**
 * Sets in `flow` (step headers, changed in place) the concurrency limit its
 * rule has in this process now, and removes the one it carried when its
 * rule has none here (redefined without `concurrency`, or not defined:
 * admission applies no limit then): a step enqueued after the submission
 * (the next one, a redriven one) tells readers in other processes the
 * limit the owner counts, not the one of a configuration since changed.
 * A queue that cannot say (no `flowConcurrencyLimit`) leaves it as it is.
 * Returns `flow`.
 */
export function withCurrentLimit(core: Pick<RuntimeCore, "queue" | "queueName">, flow: Record<string, string>): Record<string, string> {
  // Its own rule only: a rule header set on Object.prototype would give a step with no flow a limit.
  const rule = ownHeader(flow, FLOW_RULE_HEADER);
  if (rule === undefined || core.queue.flowConcurrencyLimit === undefined) return flow;
  const limit = core.queue.flowConcurrencyLimit(core.queueName, rule);
  if (limit !== undefined) flow[FLOW_CONCURRENCY_LIMIT_HEADER] = String(limit);
  else delete flow[FLOW_CONCURRENCY_LIMIT_HEADER];
  return flow;
}

/**
 * A copy of run `runId`'s input as it is at the submission's call, for a
 * submission that reads or writes before it stores the input (the caller
 * may change its array meanwhile); also in a client. A view whose bytes are
 * gone (a detached or shrunk buffer) is a `ValidationError` naming the run,
 * not an empty input.
 */
export function runInputAtCall(runId: string, input: Uint8Array): Uint8Array {
  // The run's name in the refusal built only for one: a submission's common path builds no message.
  return copyOwned(input) ?? bytesAtCall(`the input of run "${runId}"`, input);
}

/**
 * Checks the step options a submission sets, naming them as `RunOptions`
 * does, or as `path` when they sit elsewhere (a schedule's `run.options`);
 * also in a client, before writing. A field that is no option is refused.
 */
export function checkRunOptions(o: RunOptions, path = "RunOptions"): void {
  if (!isOptionObject(o)) throw new ValidationError(`${path} must be an object, got ${describeValue(o)}`);
  refuseUnknownRunOptionFields(o, path);
  checkRunOptionValues(o, path);
}

/**
 * `checkRunOptions` past the refusal of unknown fields, for options whose
 * fields are known to be options (a copy `readRunOptions` made); returns
 * the flow's step headers (see `flowHeaders`), undefined without a flow.
 */
function checkRunOptionValues(o: RunOptions, path: string): Record<string, string> | undefined {
  const flow = o.flow === undefined ? undefined : flowHeaders(o.flow, `${path}.flow`);
  // Checked to the queue's bound here: past it the queue's own check named EnqueueOptions.maxAttempts instead.
  if (o.maxAttemptsPerStep !== undefined && !isPositiveCount(o.maxAttemptsPerStep)) {
    throw new ValidationError(`${path}.maxAttemptsPerStep must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}, got ${describeValue(o.maxAttemptsPerStep)}`);
  }
  if (o.runAt !== undefined) validateInstant(`${path}.runAt`, o.runAt);
  checkRunDebounce(o, path);
  return flow;
}

export function checkEffects(effects: SettlementEffects | undefined): SettlementEffects | undefined {
  if (effects === undefined) return undefined;
  // Every op staged (read once, frozen) first: the keys checked here are the keys that commit.
  const own = withStagedKvOps(effects);
  for (const op of own.kvOps) {
    if (op.key.startsWith(RESERVED_KV_PREFIX)) throw new ReservedKeyError(op.key, `the "${RESERVED_KV_PREFIX}" KV prefix belongs to the workflow runtime`);
  }
  return own;
}

/**
 * Submits a run. Idempotent on `(runId, input)`: the durable run record
 * (written with the step-0 enqueue) catches duplicates across restarts,
 * after step 0 was claimed and its dedup key released. `mark` commits
 * with a new submission (see `applied-mark`), and so do `runtimeEffects`.
 */
export function submitRun(
  core: RuntimeCore,
  spec: RunSpec,
  group?: GroupRef,
  mark?: AppliedMark<SubmitOutcome>,
  groupName?: string,
  runtimeEffects?: SettlementEffects,
  parent?: ParentRef,
): Promise<SubmitOutcome>;
export function submitRun(
  core: RuntimeCore,
  spec: RunSpec,
  group: GroupRef | undefined,
  mark: AppliedMark<SubmitOutcome> | undefined,
  groupName: string | undefined,
  runtimeEffects: SettlementEffects | undefined,
  parent: ParentRef | undefined,
  unchanged: readonly KvExpectation[],
): Promise<SubmitOutcome | "raced">;
// With `unchanged`, "raced" when one of its keys changed (see that parameter).
export function submitRun(
  core: RuntimeCore,
  spec: RunSpec,
  group?: GroupRef,
  mark?: AppliedMark<SubmitOutcome>,
  groupName?: string,
  runtimeEffects?: SettlementEffects,
  parent?: ParentRef,
  unchanged?: readonly KvExpectation[],
): Promise<SubmitOutcome | "raced"> {
  return submitAs(core, spec, false, group, mark, groupName, runtimeEffects, parent, unchanged);
}

/**
 * Submits a run under `spec.runId`, an id drawn for this submission by
 * another process (a `TaqubaClient`, which draws the id it routes by),
 * not chosen by a caller: like a submission without a run id, its commit
 * stands only while no record holds the id, and another id is drawn (one
 * that routes to this shard) when one does. So it never answers a run a
 * caller submitted under that id as its own, nor refuses its input as
 * another's. `mark` as for `submitRun`.
 */
export function submitUnderDrawnId(core: RuntimeCore, spec: RunSpec, mark?: AppliedMark<SubmitOutcome>): Promise<SubmitOutcome> {
  return submitAs(core, spec, true, undefined, mark) as Promise<SubmitOutcome>;
}

/** Run ids a fresh submission draws before it gives up (`RunIdDrawsTakenError`): a drawn ULID is never taken twice in a row. */
export const MAX_RUN_ID_DRAWS = 16;

/** A fresh run id, routed to the runtime's shard on a sharded store (clients find the run there). */
function drawRunId(core: RuntimeCore): RunId {
  return routedOn(RunId.generate(core.clock.now()), core.placement);
}

async function submitAs(
  core: RuntimeCore,
  spec: RunSpec,
  /** The given run id was drawn by the submitter (see `submitUnderDrawnId`); an absent one is drawn here. */
  drawnGiven: boolean,
  group?: GroupRef,
  mark?: AppliedMark<SubmitOutcome>,
  /** The group's id as its user named it, for listings (`group.id` is its storage tag). */
  groupName?: string,
  runtimeEffects?: SettlementEffects,
  /** The run that starts this one as its child (see `children/child-runs`). */
  parent?: ParentRef,
  /**
   * Runtime KV keys that must still hold these values when the run's first
   * step commits (a child's start: its parent's step pointer); `"raced"`,
   * writing nothing, when one changed.
   */
  unchanged?: readonly KvExpectation[],
): Promise<SubmitOutcome | "raced"> {
  // A closed queue still answers reads from memory: a run found there is refused as a new one is at its commit.
  // (A submission called before the close and waiting on the run's lock goes on, as the close lets it.)
  // The run events close, with the queue's closed signal's reason, in that signal's abort event: read here in its
  // place, as every `AbortSignal` has a hidden class of its own and a read of one makes this site megamorphic.
  const closed = core.events.closedError;
  if (closed !== undefined) throw new ClosedError("the queue", closed);
  // Each field read once: the spec checked below is the spec submitted.
  const given = spec;
  spec = readRunSpec(given) as RunSpec;
  if (spec === null || typeof spec !== "object" || !(spec.input instanceof Uint8Array)) {
    throw new ValidationError("submit takes a RunSpec whose input is a Uint8Array");
  }
  // A copy `readRunSpec` made holds only a spec's fields, and its options (an object) only theirs, their
  // headers checked (`readRunOptions`): none of that is checked a second time. What it returned as given is.
  const read = spec !== given;
  if (!read) refuseUnknownRunSpecFields(spec);
  // A fresh id names no earlier run and no other submission: nothing to read under it, no turn to take.
  const fresh = drawnGiven || spec.runId === undefined;
  const runId = spec.runId === undefined ? drawRunId(core) : RunId.parse(spec.runId);
  const options: RunOptions = spec.options ?? NO_OPTIONS;
  const optionsRead = read && isOptionObject(options);
  const headers = !optionsRead ? checkUserHeaders(options.headers) : options.headers === undefined ? {} : refuseReservedHeaders(options.headers);
  // The input as it is now: the submission reads the store before it enqueues, and the caller may change its array meanwhile.
  // The spec's input and effects as checked are held here, not in copies of the spec.
  const input = runInputAtCall(runId, spec.input);
  if (input.byteLength > MAX_RUN_PAYLOAD_BYTES) checkRunPayload(`the input of run "${runId}"`, input);
  if (!optionsRead) checkRunOptions(options);
  // The flow's headers made once, here, for the run's steps (see `submitLocked`).
  const flow = optionsRead ? checkRunOptionValues(options, "RunOptions") : options.flow === undefined ? undefined : flowHeaders(options.flow);
  const effects = checkEffects(spec.effects);
  const inputSha256 = sha256Hex(input);
  // One submission object read by the locked part: no closure over this frame's fields, no frame between the lock and it.
  let submission = new Submission(
    core,
    runId,
    fresh,
    input,
    effects,
    options,
    headers,
    flow,
    inputSha256,
    undefined,
    group,
    mark,
    groupName,
    runtimeEffects,
    parent,
    unchanged,
  );
  // Without a tracer no span and no attributes for it.
  const span = tracing() ? startSpan("taquba.submit", { "taquba.run.id": runId, "taquba.queue": core.queueName }, undefined, "producer") : undefined;
  try {
    if (span !== undefined) submission.traceparent = traceparentOf(span);
    // A redrive, sweep or removal names only a committed run: a fresh id's submission takes no lock. Its commit
    // stands only while no record holds the id (a caller's submission may have named it): another id is drawn then.
    // An arrow made here, not bound to a name: a named one costs a definition of its name per call where the
    // sources run through esbuild's keepNames (tsx, as the peers' harness runs them).
    let out = submission.fresh ? await submitLocked(submission) : await core.submitLock.run(runId, () => submitLocked(submission));
    // Bounded: only an id source that repeats ids (a stubbed one) could find every draw taken.
    for (let draws = 1; out === "taken"; draws++) {
      if (draws >= MAX_RUN_ID_DRAWS) throw new RunIdDrawsTakenError(core.queueName, draws, submission.runId);
      submission = submission.redrawn(drawRunId(core));
      out = await submitLocked(submission);
    }
    if (span !== undefined) endSubmitSpan(span, out);
    if (out !== "raced" && out.newlySubmitted) instruments()?.runsSubmitted.add(1, { "taquba.queue": core.queueName });
    return out;
  } catch (e) {
    endWithError(span, e, "submit");
    throw e;
  }
}

/** Ends submission span `span` with the submission's outcome. */
function endSubmitSpan(span: NonNullable<ReturnType<typeof startSpan>>, out: SubmitOutcome | "raced"): void {
  if (out === "raced") endOk(span, { "taquba.outcome": "raced" });
  else endOk(span, { "taquba.outcome": out.newlySubmitted ? "submitted" : "duplicate", "taquba.job.id": out.jobId, "taquba.run.id": out.runId });
}

/**
 * The committed value at one of the runtime's own keys, for a caller that
 * only decodes it, read in this turn when the queue offers it (no copy, no
 * promise, no turn); undefined when the caller must await `kvGet`.
 */
function readNow(core: RuntimeCore, key: string): Uint8Array | null | undefined {
  return core.queue.kvGetNow === undefined ? undefined : core.queue.kvGetNow(key);
}

/**
 * The job id a duplicate submission reports for the run `record` describes
 * when that run ended between the reads of its run record and its step
 * pointer: the job its terminal record names (the incarnation is no job id).
 */
async function endedSince(core: RuntimeCore, runId: RunId, record: RunRecord): Promise<string> {
  const tk = terminalRecordKey(core.queueName, runId);
  const bytes = await core.queue.kvGet(tk);
  const ended = bytes === null ? null : decodeTerminalRecord(bytes, tk);
  return ended !== null && ended.incarnation === record.incarnation ? jobIdOfTermination(ended) : record.incarnation;
}

/** The flow headers of a run submitted without `RunOptions.flow`: none, shared (nothing writes to it). */
const NO_FLOW: Record<string, string> = Object.freeze(blankCopy<Record<string, string>>());

/**
 * One submission's checked fields, read by its part under the run's submit
 * lock (`submitLocked`): the run's records and step 0 in one commit, or the
 * outcome of the submission that came first.
 */
class Submission {
  constructor(
    readonly core: RuntimeCore,
    readonly runId: RunId,
    /** `runId` was drawn for this submission (`RunId.generate`): no record under it to read. */
    readonly fresh: boolean,
    /** The input as it was at the call (see `runInputAtCall`). */
    readonly input: Uint8Array,
    /** The caller's effects, staged and checked (see `checkEffects`). */
    readonly effects: SettlementEffects | undefined,
    readonly options: RunOptions,
    readonly headers: Record<string, string>,
    /** The flow's step headers as checked (`flowHeaders`), without the rule's limit; undefined without a flow. */
    readonly flow: Record<string, string> | undefined,
    readonly inputSha256: string,
    /** The submission span's trace context, set once the span is started (after the checks). */
    public traceparent: string | undefined,
    readonly group: GroupRef | undefined,
    readonly mark: AppliedMark<SubmitOutcome> | undefined,
    readonly groupName: string | undefined,
    readonly runtimeEffects: SettlementEffects | undefined,
    readonly parent: ParentRef | undefined,
    readonly unchanged: readonly KvExpectation[] | undefined,
  ) {
    this.optionalRecordFields = options.priority !== undefined || options.maxAttemptsPerStep !== undefined || group !== undefined || parent !== undefined;
  }

  /** The run record has a field a run seldom has (see `setOptionalRecordFields`). */
  readonly optionalRecordFields: boolean;

  /** This fresh submission under `runId`, drawn again because a record held the id drawn before. */
  redrawn(runId: RunId): Submission {
    return new Submission(
      this.core,
      runId,
      true,
      this.input,
      this.effects,
      this.options,
      this.headers,
      this.flow,
      this.inputSha256,
      this.traceparent,
      this.group,
      this.mark,
      this.groupName,
      this.runtimeEffects,
      this.parent,
      this.unchanged,
    );
  }
}

/**
 * The run's records and step 0 in one commit, or the outcome of the
 * submission that came first; `"raced"` when a key of `s.unchanged`
 * changed. The commit stands only while the run record is absent and the
 * terminal record is as read (a fresh id: absent), checked in the commit:
 * a fresh id's submission reads neither before and takes no lock, so a
 * caller's submission under the same id may commit first (ids drawn in one
 * millisecond count up by one; a caller may name any). `"taken"` then, for
 * a fresh id (the caller draws another); a caller's id reads again.
 */
async function submitLocked(s: Submission): Promise<SubmitOutcome | "raced" | "taken"> {
  for (;;) {
    const out = await submitOnce(s);
    if (out !== "taken" || s.fresh) return out;
  }
}

async function submitOnce(s: Submission): Promise<SubmitOutcome | "raced" | "taken"> {
  // The common path (a fresh id's first submission) only, in this function: a submission runs once per run, so
  // its rarer parts (a duplicate, an earlier run under the id, a group, a mark, a debounce) and the record's
  // making are functions of their own, and the JIT optimizes what is left within a few hundred runs.
  const { core, runId, input } = s;
  // Each of the run's keys built once per submission.
  const rk = runKey(core.queueName, runId);
  const pk = stepPointerKey(core.queueName, runId);
  const tk = terminalRecordKey(core.queueName, runId);
  const existingNow = s.fresh ? null : readNow(core, rk);
  const existing = existingNow !== undefined ? existingNow : await core.queue.kvGet(rk);
  if (existing !== null) return await duplicateOf(s, existing, rk, pk);
  // This submission, told apart from every other under this id: it names the run's children and memo
  // set, and is its first incarnation. Not its first step's job id: a caller's WorkflowQueue may name
  // that job as an earlier run's, gone since.
  const submission = drawRunIdentity();
  // The run's records name its first step's job: an id a caller's job took meanwhile is drawn again.
  for (;;) {
    const jobId = core.queue.nextJobId();
    try {
      const submittedAtMs = core.clock.now();
      // Optional fields set after the others, in the record's own order: no empty object spread per absent one.
      const record: Building<RunRecord> = {
        runId,
        submittedAtMs,
        inputSha256: s.inputSha256,
        // Records of this pass (a job's result, a group member's end) name it; a redrive draws another.
        incarnation: submission,
        // Told apart from every other run under this id: children name it (see `children/child-runs`).
        submission,
        headers: s.headers,
        memoPrefix: core.memos.prefix,
        // Its own memos: a run under this id that ended before wrote its own under another set.
        memoSet: submission,
      };
      // The rare fields (a group, a parent, options set) out of line: this function runs once per run.
      if (s.optionalRecordFields) setOptionalRecordFields(s, record);
      const effects = new SettlementEffects();
      if (s.effects !== undefined) effects.merge(s.effects);
      // The runtime's own writes (a schedule's state) may use the reserved prefix the caller's may not.
      if (s.runtimeEffects !== undefined) effects.merge(s.runtimeEffects);
      // The runtime's own records, encoded for this commit alone: staged without kvPut's copy.
      stageCommitOnly(effects, rk, runRecordForCommit(record, core.queue));
      const described = describePayload(core.runner, input);
      stageCommitOnly(
        effects,
        pk,
        stepPointerForCommit(described?.step === undefined ? { step: 0, jobId } : { step: 0, jobId, name: described.step }, core.queue),
      );
      // A terminal record of an earlier run under this id no longer describes the run, nor do
      // that run's index entries and history.
      // Read in this turn when the queue offers it: a caller's id commits in the turn of its reads, before a
      // fresh submission drawing that id can (whose commit is then refused and draws again).
      let earlier: Uint8Array | null = null;
      if (!s.fresh) {
        const earlierNow = readNow(core, tk);
        earlier = earlierNow !== undefined ? earlierNow : await core.queue.kvGet(tk);
        if (earlier !== null) await forgetEarlier(core, tk, earlier, effects);
      }
      // The rule's limit travels with the steps, so readers in other processes can tell a full key.
      const flow = s.flow === undefined ? NO_FLOW : withCurrentLimit(core, s.flow);
      stageSubmission(core.queueName, record, described, input, effects, s.groupName, flow, core.queue);
      if (s.mark !== undefined || s.group !== undefined) stageMarkAndMember(s, effects, jobId, submission);
      // What was read (a fresh id: nothing) still holds in the commit, or the commit is refused (see `submitLocked`).
      const held: KvExpectation[] = [
        { key: rk, value: null },
        { key: tk, value: earlier },
      ];
      const unchanged = s.unchanged === undefined ? held : [...s.unchanged, ...held];
      // Drawn from the queue this enqueue commits to: inserted without a look-up unless a caller's id may have taken it since.
      const drawn = stepZeroOptions(s, jobId, flow);
      if (s.options.debounce === undefined) {
        const out = await core.queue.enqueueIfUnchanged(core.queueName, input, drawn, effects, unchanged);
        if (out !== "raced") return { runId, jobId: out.outcome.jobId, newlySubmitted: out.outcome.newlyEnqueued };
      } else {
        const out = await submitDebounced(core, runId, input, drawn, effects, s.options.debounce, unchanged);
        if (out !== "raced") return out;
      }
      // A key of the caller's changed, or perhaps only the run's: the caller reads again (a child's start).
      if (s.unchanged !== undefined) return "raced";
      return "taken";
    } catch (e) {
      if (!drawnIdTaken(e, jobId)) throw e;
    }
  }
}

/** The answer to a submission under a caller's id that found run record `existing` at `rk` (submitted before): the run's current job (its step pointer at `pk`), or `InputMismatchError`. */
async function duplicateOf(s: Submission, existing: Uint8Array, rk: string, pk: string): Promise<SubmitOutcome> {
  const { core, runId } = s;
  const record = decodeRunRecord(existing, rk);
  if (record.inputSha256 !== s.inputSha256) throw new InputMismatchError(runId);
  const pointer = await core.queue.kvGet(pk);
  const jobId = pointer === null ? await endedSince(core, runId, record) : decodeStepPointer(pointer, pk).jobId;
  return { runId, jobId, newlySubmitted: false };
}

/** Sets on `record` the fields of submission `s` a run seldom has: its priority and attempts, its group, its parent. */
function setOptionalRecordFields(s: Submission, record: Building<RunRecord>): void {
  const { options, group, parent } = s;
  if (options.priority !== undefined) record.priority = options.priority;
  if (options.maxAttemptsPerStep !== undefined) record.maxAttempts = options.maxAttemptsPerStep;
  if (group !== undefined) record.group = { id: group.id, key: group.key };
  if (parent !== undefined) record.parent = { ...parent };
}

/** Stages into `effects` the removal of terminal record `earlier` (at `tk`) of an earlier run under the id, with that run's index entries and history. */
async function forgetEarlier(core: RuntimeCore, tk: string, earlier: Uint8Array, effects: SettlementEffects): Promise<void> {
  effects.kvDelete(tk);
  await stageForgotten(core.queue, core.queueName, decodeTerminalRecord(earlier, tk), effects);
}

/** Stages into `effects` the applied mark of `s` and its group member record, when it has them. */
function stageMarkAndMember(s: Submission, effects: SettlementEffects, jobId: string, submission: string): void {
  const { core, runId, group } = s;
  if (s.mark !== undefined) markEffects(s.mark, { runId, jobId, newlySubmitted: true }, effects);
  if (group !== undefined) {
    effects.kvPut(groupMemberKey(core.queueName, group.id, group.key), encodeGroupMember({ key: group.key, runId, incarnation: submission, state: "active" }));
  }
}

/**
 * The checked options of the run's first step, job `jobId`, with `flow`'s
 * headers. Without a flow or a debounce, every string in them was checked
 * by the submission (the run's headers under the run's tighter limits, with
 * the reserved prefix refused; the run id) or made by the runtime (the
 * step, the trace context, the dedup key), and the headers are copied into
 * a fresh object by assignment, as the queue's check copies them: the queue
 * does not check them again (`drawnStepOptions`). Otherwise the queue
 * checks them all (`drawnIdOptions`): a flow's keys were checked for their
 * length only.
 */
function stepZeroOptions(s: Submission, jobId: string, flow: Record<string, string>): EnqueueOptions {
  const { runId, options, headers } = s;
  if (flow === NO_FLOW && options.debounce === undefined) {
    const stepHeaders: Record<string, string> = {};
    // The run's own headers only (`checkRunHeaders` made them so), each under a name `Object.prototype` may hold too.
    for (const k of Object.keys(headers)) setOwn(stepHeaders, k, headers[k]!);
    stepHeaders[HEADER_RUN_ID] = runId;
    stepHeaders[HEADER_STEP] = "0";
    if (s.traceparent !== undefined) stepHeaders[HEADER_TRACEPARENT] = s.traceparent;
    return drawnStepOptions({
      jobId,
      dedupKey: stepDedupKey(runId, 0),
      headers: stepHeaders,
      priority: options.priority,
      maxAttempts: options.maxAttemptsPerStep,
      runAt: options.runAt,
    });
  }
  const stepHeaders: Record<string, string> = { ...headers, ...flow, [HEADER_RUN_ID]: runId, [HEADER_STEP]: "0" };
  if (s.traceparent !== undefined) stepHeaders[HEADER_TRACEPARENT] = s.traceparent;
  const opts: Building<EnqueueOptions> = { jobId, dedupKey: stepDedupKey(runId, 0), headers: stepHeaders };
  if (options.priority !== undefined) opts.priority = options.priority;
  if (options.maxAttemptsPerStep !== undefined) opts.maxAttempts = options.maxAttemptsPerStep;
  if (options.runAt !== undefined) opts.runAt = options.runAt;
  if (options.debounce !== undefined) opts.debounce = { key: options.debounce.key, periodMs: options.debounce.periodMs };
  return drawnIdOptions(opts);
}

/**
 * The enqueue of a debounced run's first step, with the end of the run it
 * replaces in the same commit, while every key of `unchanged` holds its
 * value. A race (of the window, or of `unchanged`) is handed back: the
 * caller reads the run's records, its guard and the window again.
 */
async function submitDebounced(
  core: RuntimeCore,
  runId: RunId,
  input: Uint8Array,
  opts: EnqueueOptions,
  effects: SettlementEffects,
  debounce: NonNullable<RunOptions["debounce"]>,
  unchanged: readonly KvExpectation[],
): Promise<SubmitOutcome | "raced"> {
  const enqueue = core.queue.enqueueSuperseding;
  if (enqueue === undefined) throw new ValidationError("RunOptions.debounce needs a runtime over a Queue (this queue port cannot supersede runs)");
  const replaced = await supersessionOf(core, debounce, runId);
  const out = await enqueue.call(core.queue, core.queueName, input, opts, effects, replaced, unchanged);
  if (out === "raced") return out;
  if (out.outcome.newlyEnqueued && replaced.ended !== undefined) {
    core.noteTerminated(replaced.ended.runId, replaced.ended.atMs);
    instruments()?.runsTerminated.add(1, { "taquba.queue": core.queueName, "taquba.outcome": "cancelled" });
  }
  return { runId, jobId: out.outcome.jobId, newlySubmitted: out.outcome.newlyEnqueued };
}
