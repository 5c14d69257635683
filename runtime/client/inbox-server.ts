/**
 * @module The owner's side of the client inbox: the process that opened the
 * queue reads requests that clients in other processes wrote to the store,
 * applies each exactly once, answers it in the store and deletes it.
 *
 * Exactly once: a request that changes anything is applied by one commit
 * that also writes its applied mark (the answer, see `applied-mark`). The
 * answer object and the deletion of the request come after. A crash in
 * between leaves the request in the inbox; the next owner finds the mark
 * and answers from it instead of applying again (a cancel, whose mark
 * commits before its last commit, is also carried through). A request that
 * changes nothing (a duplicate submission, a cancel of an ended run) is
 * simply applied again, with the same answer.
 *
 * Requests are taken in the order of their names (ULIDs, so in the order
 * clients made them), a window of them at a time: those about different
 * runs, signal keys or schedules are applied concurrently (their commits share
 * the engine's group commit, and each one's answer and deletion overlap the
 * others), those about the same one in order, and group and dead-job
 * requests alone. An object that is not a request this version understands
 * is moved to `dead/` with the reason and never stops the others.
 */
import { ConstructionGate } from "../internal-construction.js";
import { ClosedError, FencedError, StoreUnavailableError, TaqubaError } from "../errors.js";
import { JobRunner } from "../typed/job-runner.js";
import { SettlementEffects } from "../queue/effects.js";
import type { Queue } from "../queue/queue.js";
import type { ObjectStore } from "../store/object-store.js";
import { PrefixedStore } from "../queue/prefixed-store.js";
import { listedInOrder } from "../store/listing-pages.js";
import { type AppliedMark, markEffects } from "../workflow/records/applied-mark.js";
import { encodeValue } from "../workflow/records/codec.js";
import type { WorkflowLogger } from "../logger.js";
import type { WorkflowRuntime } from "../workflow/workflow-runtime.js";
import { answerKey, answersPrefix, appliedKey, appliedPrefix, deadKey, isRequestId, KEEP_NAME, keepKeys, requestsPrefix, requestTime } from "./inbox-layout.js";
import {
  answeredError,
  decodeAnswer,
  decodeRequest,
  encodeAnswer,
  MalformedRequestError,
  type AnswerValue,
  type InboxAnswer,
  type InboxRequest,
  type ScheduleRequest,
} from "./request-codec.js";
import type { ScheduleFire } from "../workflow/schedules/schedule-types.js";
import type { SubmitOutcome } from "../workflow/runs/run-types.js";
import type { StatsRecount } from "../queue/stats-recount.js";
import { RunId } from "../workflow/runs/run-id.js";
import { watchPrefixes } from "./store-watch.js";
import { keyedJobRunId } from "../jobs/job-codec.js";
import { groupTag, manifestKey } from "../workflow/groups/group-keys.js";
import { decodeManifest } from "../workflow/groups/group-records.js";
import { GroupNotFoundError } from "../workflow/groups/group-errors.js";
import { GroupRecreatedError } from "./client-errors.js";
import { ValidationError } from "../errors.js";
import { checkStoreArg } from "../store/store-check.js";
import { checkOptionalMs, describeValue, hasMethods, optionFields, readExactOptions } from "../option-values.js";
import { readLogger } from "../logger.js";

/** Default listing interval on a store without change notification (S3): 3,600 LISTs an hour. */
export const DEFAULT_LIST_INTERVAL_MS = 1000;
/** Default listing interval on a local directory, where `fs.watch` does the work and listing is the safety net. */
export const DEFAULT_LOCAL_LIST_INTERVAL_MS = 5000;
/** Default time applied marks and unread answers are kept: far longer than any client retries a write. */
export const DEFAULT_APPLIED_RETENTION_MS = 60 * 60 * 1000;

/** Default number of requests applied at once: see `ServeClientsOptions.maxConcurrentRequests`. */
export const DEFAULT_MAX_CONCURRENT_REQUESTS = 32;

/**
 * Most request names a pass holds at once: a pass lists this many (one page
 * of an S3 listing), applies them a window at a time, then lists on after
 * the last. An inbox of a million requests costs no more memory than one
 * of a thousand.
 */
export const INBOX_LIST_PAGE = 1000;

/** A request that does not decode is left alone this long after it was made before it is moved aside. */
const MALFORMED_GRACE_MS = 30_000;
/** The store as a refused listing's message names it. */
const INBOX_STORE = "the store given to serveClients";

/** Options of {@link serveClients}. */
export interface ServeClientsOptions {
  /** The store given to `Queue.open` (the inbox lives beside the queue's engine). */
  readonly store: ObjectStore;
  /** Time between listings of the inbox. Default: 1,000 ms, or 5,000 ms on a local directory (which notifies). */
  readonly listIntervalMs?: number;
  /** How long applied marks and unread answers are kept. Default: 1 hour. */
  readonly appliedRetentionMs?: number;
  /**
   * How many requests are read and applied at once (1 to 1,000; default 32).
   * Requests about the same run (a keyed job's included), signal key or
   * schedule are always applied one after the other in the order they were
   * made; 1 applies every request alone.
   */
  readonly maxConcurrentRequests?: number;
  /** Default: `console.error`. */
  readonly logger?: WorkflowLogger;
}

const SERVE_CLIENTS_KEYS = optionFields<ServeClientsOptions>({
  store: true,
  listIntervalMs: true,
  appliedRetentionMs: true,
  maxConcurrentRequests: true,
  logger: true,
});

/** What an inbox has done since it started. */
export interface InboxStats {
  applied: number;
  /** Requests found already applied (the owner crashed after applying them). */
  replayed: number;
  deadLettered: number;
  listings: number;
}

/** Infrastructure failures leave the request in the inbox for the next try; anything else is the request's answer. */
function isInfrastructure(err: unknown): boolean {
  return err instanceof ClosedError || err instanceof FencedError || err instanceof StoreUnavailableError || (err instanceof TaqubaError && err.retryable);
}

const defaultLogger: WorkflowLogger = {
  error: (fields, msg) => console.error(`taquba client inbox: ${msg ?? ""}`, fields),
};

/** `new ClientInbox` is internal: use serveClients(target, options) (see internal-construction.ts). */
const INBOX_GATE = new ConstructionGate("ClientInbox", "use serveClients(target, options)");

/**
 * The owner's inbox loop; see the module documentation. Start it with
 * {@link serveClients} in the process that opened the queue.
 */
export class ClientInbox {
  readonly #queue: Queue;
  readonly #target: WorkflowRuntime | JobRunner;
  readonly #runtime: WorkflowRuntime;
  readonly #store: PrefixedStore;
  readonly #q: string;
  readonly #intervalMs: number;
  readonly #retentionMs: number;
  readonly #window: number;
  readonly #logger: WorkflowLogger;
  readonly #stop = new AbortController();
  readonly #loop: Promise<void>;
  readonly #unwatch: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #woken = false;
  #draining: Promise<number> | undefined;
  /** The pass that follows the running one, for callers that came while it ran (see `drain`). */
  #again: Promise<number> | undefined;
  #lastSweep = 0;
  readonly stats: InboxStats = { applied: 0, replayed: 0, deadLettered: 0, listings: 0 };

  readonly #release: () => void;

  /** @internal Use {@link serveClients}. */
  constructor(queue: Queue, target: WorkflowRuntime | JobRunner, opts: ServeClientsOptions, release: () => void) {
    INBOX_GATE.check();
    this.#release = release;
    this.#queue = queue;
    this.#target = target;
    this.#runtime = target instanceof JobRunner ? target.runtime : target;
    this.#store = new PrefixedStore(opts.store, `${queue.name}/`);
    this.#q = this.#runtime.queueName;
    this.#unwatch = watchPrefixes(this.#store, [requestsPrefix(this.#q)], () => this.#poke());
    this.#intervalMs = opts.listIntervalMs ?? (this.#unwatch === undefined ? DEFAULT_LIST_INTERVAL_MS : DEFAULT_LOCAL_LIST_INTERVAL_MS);
    this.#retentionMs = opts.appliedRetentionMs ?? DEFAULT_APPLIED_RETENTION_MS;
    this.#window = opts.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS;
    this.#logger = opts.logger ?? defaultLogger;
    this.#loop = this.#run();
  }

  #poke(): void {
    this.#woken = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    try {
      // Keeps the inbox folders in place on a local store, so watching them stays cheap.
      for (const k of keepKeys(this.#q)) await this.#store.put(k, encodeValue({ since: this.#queue.clock.now() }));
    } catch (err) {
      this.#logger.error({ err }, "could not write the inbox placeholder objects; serving anyway");
    }
    while (!signal.aborted && !this.#queue.closed) {
      this.#woken = false;
      let handled = 0;
      try {
        handled = await this.drain();
      } catch (err) {
        if (this.#queue.closed || signal.aborted) break;
        this.#logger.error({ err }, "reading the client inbox failed; retrying at the next listing");
      }
      // A pass that found work lists again at once: more requests came while it ran.
      if (handled > 0 || this.#woken || signal.aborted) continue;
      const tick = new AbortController();
      const onStop = () => tick.abort();
      signal.addEventListener("abort", onStop);
      try {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          this.#queue.clock.waitUntil(this.#queue.clock.now() + this.#intervalMs, tick.signal).then(resolve, resolve);
        });
      } finally {
        this.#wake = undefined;
        tick.abort();
        signal.removeEventListener("abort", onStop);
      }
    }
  }

  /**
   * Reads the inbox now and applies every request in it; resolves with how
   * many it handled. A call while a pass runs gets the next pass, shared by
   * every call made meanwhile: the running one may have listed the inbox
   * before a request its caller had just written. Once `stop()` was called
   * (and for a call still waiting for its pass then) rejects with
   * `ClosedError`: no pass reads the inbox, whose requests wait in the store
   * for the next server.
   */
  drain(): Promise<number> {
    // A stopped inbox no longer reads or sweeps the store (another may serve it now), and resolving 0 would say it was empty.
    if (this.#stop.signal.aborted) return Promise.reject(new ClosedError("this client inbox"));
    const running = this.#draining;
    if (running === undefined) {
      const pass = this.#drainOnce().finally(() => {
        this.#draining = undefined;
      });
      this.#draining = pass;
      return pass;
    }
    this.#again ??= running.then(
      () => this.#drainAgain(),
      () => this.#drainAgain(),
    );
    return this.#again;
  }

  #drainAgain(): Promise<number> {
    this.#again = undefined;
    return this.drain();
  }

  async #drainOnce(): Promise<number> {
    this.stats.listings++;
    let handled = 0;
    // A page at a time, each listed after the last name of the one before: order and once-each hold across pages.
    for (let after: string | undefined; ; ) {
      const names = await this.#requestPage(after);
      for (let i = 0; i < names.length; i += this.#window) {
        if (this.#stop.signal.aborted || this.#queue.closed) return handled;
        handled += await this.#handleWindow(names.slice(i, i + this.#window));
      }
      if (names.length < INBOX_LIST_PAGE) break;
      after = names[names.length - 1];
    }
    await this.#maybeSweep();
    return handled;
  }

  /** The names of the first {@link INBOX_LIST_PAGE} requests after the name `after` (from the first without), in key order. */
  async #requestPage(after: string | undefined): Promise<string[]> {
    const prefix = requestsPrefix(this.#q);
    const names: string[] = [];
    // In order and once each: requests about one subject are applied in the order listed.
    for await (const o of listedInOrder(this.#store, prefix, INBOX_STORE, after === undefined ? {} : { startAfter: `${prefix}${after}` })) {
      const name = o.key.slice(prefix.length);
      if (name === KEEP_NAME) continue;
      names.push(name);
      // Leaving the loop ends the listing: the store is asked for no further page.
      if (names.length === INBOX_LIST_PAGE) break;
    }
    return names;
  }

  /**
   * Reads the requests `names` at once and applies them: concurrently when
   * about different subjects, in order when about the same one (see
   * `subjectOf`). Rejects with the first failure once all have settled; the
   * requests after a failed one on its subject are left for the next pass.
   */
  async #handleWindow(names: readonly string[]): Promise<number> {
    const prefix = requestsPrefix(this.#q);
    const read = await Promise.allSettled(names.map((name) => this.#store.get(`${prefix}${name}`)));
    const tasks: Array<Promise<boolean>> = [];
    const chains = new Map<string, Promise<boolean>>();
    for (const [i, got] of read.entries()) {
      if (got.status === "rejected") {
        tasks.push(Promise.reject(got.reason));
        continue;
      }
      const name = names[i]!;
      const obj = got.value;
      if (obj === null) continue;
      const request = this.#decode(name, obj.body);
      const subject = request === undefined || this.#window === 1 ? ALONE : subjectOf(request, this.#q);
      if (subject === ALONE) {
        // After everything before it, and before everything after it.
        await Promise.allSettled(tasks);
        const task = this.#handle(name, obj.body, request);
        tasks.push(task);
        await task.catch(() => undefined);
        chains.clear();
        continue;
      }
      const before = chains.get(subject);
      const task = before === undefined ? this.#handle(name, obj.body, request) : before.then(() => this.#handle(name, obj.body, request));
      chains.set(subject, task);
      tasks.push(task);
    }
    const settled = await Promise.allSettled(tasks);
    const failed = settled.find((r) => r.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    return settled.filter((r) => r.status === "fulfilled" && r.value).length;
  }

  /** The request in `body`, or undefined when it is not one (handled alone, by `#handle`). */
  #decode(name: string, body: Uint8Array): InboxRequest | undefined {
    if (!isRequestId(name)) return undefined;
    try {
      return decodeRequest(body);
    } catch (err) {
      if (err instanceof MalformedRequestError) return undefined;
      throw err;
    }
  }

  async #handle(name: string, body: Uint8Array, decoded: InboxRequest | undefined): Promise<boolean> {
    const key = `${requestsPrefix(this.#q)}${name}`;
    if (!isRequestId(name)) {
      await this.#deadLetter(name, key, body, "the object name is not a request id (a ULID); it was not written by a TaqubaClient");
      return true;
    }
    let request: InboxRequest;
    try {
      request = decoded ?? decodeRequest(body);
    } catch (err) {
      if (!(err instanceof MalformedRequestError)) throw err;
      // A store without atomic puts can show a request still being written: give a young one time.
      if (this.#queue.clock.now() - requestTime(name) < MALFORMED_GRACE_MS) return false;
      await this.#deadLetter(name, key, body, err.reason);
      return true;
    }
    const answer = await this.#answerOf(name, request);
    await this.#store.put(answerKey(this.#q, name), encodeAnswer(answer));
    await this.#store.delete(key);
    return true;
  }

  async #answerOf(id: string, request: InboxRequest): Promise<InboxAnswer> {
    const markKey = appliedKey(this.#q, id);
    const found = await this.#queue.kvGet(markKey);
    if (found !== null) {
      this.stats.replayed++;
      const answer = decodeAnswer(found);
      if (request.op === "cancel") await this.#finishCancel(request.runId);
      return answer;
    }
    const mark = <A extends AnswerValue>(): AppliedMark<A> => ({ key: markKey, encode: (value) => encodeAnswer({ ok: true, value }) });
    try {
      const value = await this.#apply(request, mark, id);
      this.stats.applied++;
      return { ok: true, value };
    } catch (err) {
      if (isInfrastructure(err)) throw err;
      this.stats.applied++;
      return { ok: false, error: answeredError(err) };
    }
  }

  #apply(r: InboxRequest, mark: <A extends AnswerValue>() => AppliedMark<A>, id: string): Promise<AnswerValue> {
    const cmds = this.#runtime.marked;
    switch (r.op) {
      case "submit": {
        if (r.unlessKnown === true) return this.#submitUnlessKnown(r, mark<SubmitOutcome>());
        const effects = new SettlementEffects();
        for (const op of r.kvOps) {
          if (op.kind === "put") effects.kvPut(op.key, op.value);
          else effects.kvDelete(op.key);
        }
        const spec = { runId: r.runId, input: r.input, options: r.options, ...(effects.isEmpty ? {} : { effects }) };
        return r.drawn === true ? cmds.submitDrawn(spec, mark()) : cmds.submit(spec, mark());
      }
      case "job":
        if (!(this.#target instanceof JobRunner)) {
          throw new ValidationError(
            `the owner of queue "${this.#queue.name}" serves a WorkflowRuntime without jobs; serve its JobRunner to accept job submissions from clients`,
          );
        }
        return this.#target.submitPrepared(r.job, mark());
      case "signal":
        return cmds.signal(r.key, r.payload, mark());
      case "clearSignal":
        return cmds.clearSignal(r.key, mark());
      case "cancel":
        return cmds.cancel(r.runId, mark());
      case "retry":
        if (r.job === true) {
          if (!(this.#target instanceof JobRunner)) {
            throw new ValidationError(
              `the owner of queue "${this.#queue.name}" serves a WorkflowRuntime without jobs; serve its JobRunner to retry jobs from clients`,
            );
          }
          return this.#target.retryJobMarked(r.runId, mark());
        }
        return cmds.retry(r.runId, r.fromStep === undefined ? {} : { fromStep: r.fromStep }, mark());
      case "repair": {
        const { op: _op, runId, ...opts } = r;
        return cmds.repair(runId, opts, mark());
      }
      case "recountStats": {
        const { op: _op, queueName, ...opts } = r;
        // The mark commits with the record; a dry run or a record already recounted commits nothing and answers the same on a replay.
        return this.#queue.recountStats(queueName, opts, (answer) => markEffects(mark<StatsRecount>(), answer));
      }
      case "requeueDead":
        // The mark commits with the requeue; a job that is not dead commits nothing and answers false again on a replay.
        return this.#queue.requeueDead(r.jobId, markEffects(mark<boolean>(), true));
      case "schedule":
        return this.#schedule(r, mark<ScheduleFire>(), requestTime(id));
      case "groupManifest":
        // An object write that changes nothing when applied again: no mark.
        return this.#runtime.group(r.groupId).recordShardedManifest(r.members, r.options);
      case "groupMembers":
        return this.#groupMembers(r, mark<readonly string[]>());
      // Removing again removes nothing more, and a second marker only starts a later window: no mark.
      case "groupForget":
        return this.#runtime.group(r.groupId).forgetShardPart({ createdAtMs: r.createdAtMs, manifest: r.manifest });
      case "groupRetain":
        return this.#runtime.group(r.groupId).retainShardPart({ createdAtMs: r.createdAtMs, manifest: r.manifest });
    }
  }

  /**
   * Submits one shard's members of a group spanning shards. Each member is
   * its own commit; a replay after a crash part way leaves every member
   * with a record alone, so none runs twice. The mark, written last, keeps
   * the first application's answer for a replay after it.
   */
  async #groupMembers(r: Extract<InboxRequest, { op: "groupMembers" }>, mark: AppliedMark<readonly string[]>): Promise<readonly string[]> {
    await this.#checkGroupCreation(r.groupId, r.createdAtMs);
    const submitted = await this.#runtime.group(r.groupId).submitShardMembers(r.members, r.options, r.createdAtMs);
    await this.#queue.kvPut(mark.key, mark.encode(submitted));
    return submitted;
  }

  /**
   * Refuses members dated with a creation time the group's manifest (in the
   * memo store every shard shares) does not have: the group was forgotten
   * and made again since the client read the time, and members indexed at
   * the old time would sit under an entry no listing of the group reaches.
   */
  async #checkGroupCreation(groupId: string, createdAtMs: number): Promise<void> {
    const memos = this.#runtime.memoStore;
    const key = manifestKey(memos.prefix, groupTag(groupId));
    const found = await memos.store.get(key);
    const manifest = found === null ? null : decodeManifest(found.body, key);
    if (manifest === null || manifest.groupId !== groupId) throw new GroupNotFoundError(groupId);
    if (manifest.createdAtMs !== createdAtMs) throw new GroupRecreatedError(groupId, createdAtMs, manifest.createdAtMs);
  }

  /**
   * A submission applied only when the runtime has no record of the run:
   * requests are applied one at a time, so none slips in between the look
   * and the submission.
   */
  async #submitUnlessKnown(r: Extract<InboxRequest, { op: "submit" }>, mark: AppliedMark<SubmitOutcome>): Promise<SubmitOutcome> {
    // A drawn id names no run of the caller's: a record holding it makes the submission draw another.
    if (r.drawn === true) return this.#runtime.marked.submitDrawn({ runId: r.runId, input: r.input, options: r.options }, mark);
    if ((await this.#runtime.status(r.runId)) !== null) return { runId: RunId.parse(r.runId), jobId: "", newlySubmitted: false };
    return this.#runtime.marked.submit({ runId: r.runId, input: r.input, options: r.options }, mark);
  }

  /**
   * A command on a schedule. Pause, resume, remove and backfill change nothing when
   * applied again (a backfill leaves a tick whose run exists alone); a
   * trigger's run id carries the request's time, so a replay names the
   * same run, and its mark keeps the first answer.
   */
  #schedule(r: ScheduleRequest, mark: AppliedMark<ScheduleFire>, atMs: number): Promise<AnswerValue> {
    const schedules = this.#runtime.schedules;
    switch (r.action) {
      case "pause":
        return schedules.pause(r.scheduleId);
      case "resume":
        return schedules.resume(r.scheduleId);
      case "trigger":
        return schedules.triggerMarked(r.scheduleId, mark, atMs);
      case "remove":
        // Deletes the record without reading it, so a damaged one can be removed; a replay answers false.
        return schedules.remove(r.scheduleId);
      case "backfill":
        // A part at a time when the client asks so: no request holds the inbox for a whole long range.
        return r.maxTicks === undefined
          ? schedules.backfill(r.scheduleId, r.fromMs, r.toMs)
          : schedules.backfillPart(r.scheduleId, r.fromMs, r.toMs, r.maxTicks);
    }
  }

  /**
   * Carries a replayed cancel through. Its mark commits with the run's
   * cancel flag, and the removal of the run's current step is a second
   * commit: an owner stopped in between (its lease ran out, a crash) leaves
   * a flagged run whose step, waiting for a signal or a timer, would only
   * see the flag when it next runs, possibly an hour later. Only a run
   * still flagged is cancelled: one that ended since is left as it is, and
   * so is one re-opened since (`retryRun`), which this request never meant.
   */
  async #finishCancel(runId: string): Promise<void> {
    try {
      if ((await this.#runtime.status(runId))?.state === "cancelling") await this.#runtime.cancel(runId);
    } catch (err) {
      if (isInfrastructure(err)) throw err;
      this.#logger.error({ err, runId }, "finishing a replayed cancel failed; the run ends cancelled when its current step next runs");
    }
  }

  async #deadLetter(name: string, key: string, body: Uint8Array, reason: string): Promise<void> {
    this.stats.deadLettered++;
    this.#logger.error({ object: key, reason }, "moved an unreadable inbox object aside");
    await this.#store.put(deadKey(this.#q, name), encodeValue({ reason, at: this.#queue.clock.now(), body }));
    await this.#store.delete(key);
  }

  /** Removes applied marks and unread answers older than the retention, at most ten times per retention period. */
  async #maybeSweep(): Promise<void> {
    const now = this.#queue.clock.now();
    if (now - this.#lastSweep < this.#retentionMs / 10) return;
    this.#lastSweep = now;
    const cutoff = now - this.#retentionMs;
    const prefix = appliedPrefix(this.#q);
    for (let after: string | undefined; ; ) {
      const page = await this.#queue.kvScan(prefix, { limit: 500, ...(after === undefined ? {} : { after }) });
      let old = 0;
      for (const e of page.entries) {
        const id = e.key.slice(prefix.length);
        if (isRequestId(id) && requestTime(id) >= cutoff) return this.#sweepAnswers(cutoff);
        await this.#queue.kvDelete(e.key);
        old++;
      }
      if (page.nextCursor === undefined || old === 0) break;
      after = page.nextCursor;
    }
    await this.#sweepAnswers(cutoff);
  }

  async #sweepAnswers(cutoff: number): Promise<void> {
    const prefix = answersPrefix(this.#q);
    const stale: string[] = [];
    // In order: the sweep stops at the first answer too young, so one listed out of order would keep older ones for ever.
    for await (const o of listedInOrder(this.#store, prefix, INBOX_STORE)) {
      const id = o.key.slice(prefix.length);
      if (id === KEEP_NAME) continue;
      if (!isRequestId(id) || requestTime(id) >= cutoff) break;
      stale.push(o.key);
    }
    for (const k of stale) await this.#store.delete(k);
  }

  /** Stops serving; a pass in progress finishes its current request first. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#unwatch?.();
    this.#wake?.();
    await this.#loop;
    await this.#again?.catch(() => {});
    await this.#draining?.catch(() => {});
    this.#release();
  }
}

/**
 * Serves `TaqubaClient`s in other processes: applies the requests they
 * write to the store's inbox to `target` (the runtime, or the job runner
 * when clients submit jobs). Call it in the one process that opened
 * `queue`; stop it before closing the queue.
 *
 * @example
 * const queue = await Queue.open(store, "app");
 * const runner = JobRunner.builder(queue, store).register(emailSendJob, new EmailSend()).build();
 * const inbox = serveClients(queue, runner, { store });
 * // ...
 * await inbox.stop();
 */
export function serveClients(queue: Queue, target: WorkflowRuntime | JobRunner, given: ServeClientsOptions): ClientInbox {
  // Each field read once: what is checked is what the inbox runs with.
  const opts = readExactOptions(given, SERVE_CLIENTS_KEYS, "ServeClientsOptions") as ServeClientsOptions;
  if (!hasMethods(opts.store, ["get", "put", "list", "delete"]))
    throw new ValidationError(`ServeClientsOptions.store must be the ObjectStore given to Queue.open, got ${describeValue(opts.store)}`);
  // A Proxy over a built-in store or a method read that throws is refused here, before any request.
  checkStoreArg("ServeClientsOptions.store", opts.store);
  for (const k of ["listIntervalMs", "appliedRetentionMs"] as const) checkOptionalMs(`ServeClientsOptions.${k}`, opts[k], 1, 24 * 3600 * 1000);
  const n = opts.maxConcurrentRequests;
  if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > 1000))
    throw new ValidationError(`ServeClientsOptions.maxConcurrentRequests must be a whole number from 1 to 1000, got ${describeValue(n)}`);
  const logger = readLogger("ServeClientsOptions.logger", opts.logger, ["error"]);
  const runtime = target instanceof JobRunner ? target.runtime : target;
  const served = servedInboxes.get(queue) ?? new Set<string>();
  // Two loops over one inbox would both find a request unapplied and apply it twice.
  if (served.has(runtime.queueName)) {
    throw new ValidationError(
      `the client inbox of step queue "${runtime.queueName}" of queue "${queue.name}" is already served in this process; stop that ClientInbox first`,
    );
  }
  served.add(runtime.queueName);
  servedInboxes.set(queue, served);
  return INBOX_GATE.build(() => new ClientInbox(queue, target, logger === undefined ? opts : { ...opts, logger }, () => served.delete(runtime.queueName)));
}

/** The subject of a request handled alone: after all before it, before all after it. */
const ALONE = "";

/**
 * What a request is about: requests with the same subject are applied in
 * the order they were made, others concurrently. A keyed job is about the
 * run its key names (on step queue `q`), so a cancel or retry of that run
 * waits for it. Group and dead-job requests touch many runs or jobs and go
 * alone.
 */
function subjectOf(r: InboxRequest, q: string): string {
  switch (r.op) {
    case "submit":
    case "cancel":
    case "repair":
      return `run:${r.runId}`;
    case "retry":
      return r.job === true ? ALONE : `run:${r.runId}`;
    case "signal":
    case "clearSignal":
      return `signal:${r.key}`;
    case "job":
      if (r.job.idempotencyKey !== undefined) return `run:${keyedJobRunId(q, r.job.name, r.job.idempotencyKey)}`;
      return r.job.runId === undefined ? ALONE : `run:${r.job.runId}`;
    case "schedule":
      return `schedule:${r.scheduleId}`;
    case "requeueDead":
    case "recountStats":
    case "groupManifest":
    case "groupMembers":
    case "groupForget":
    case "groupRetain":
      return ALONE;
  }
}

/** The step queues whose inbox is served, per open queue. */
const servedInboxes = new WeakMap<Queue, Set<string>>();
