/**
 * @module Schedules on a sharded deployment. A schedule's ticks are decided
 * by the owner of its home shard, `fnv1a("schedule:" + id) mod S`, alone:
 * its state (last decided tick, last run, buffered tick, paused) lives
 * there, so exactly one process decides each tick at a time, whichever
 * process owns that shard. Each tick's run goes to the shard of its run id,
 * like every other run. When that is the home shard, the run and the
 * schedule's new state commit together; otherwise the home shard asks that
 * shard's owner through its client inbox (idempotent on the run id) and
 * then writes the new state, so a crash in between decides the tick again
 * and finds its run there.
 */
import type { ObjectStore } from "../store/object-store.js";
import { TaqubaClient } from "../client/taquba-client.js";
import { shardOfRun, shardOfSchedule, shardStoreName } from "../client/shard-route.js";
import { ValidationError } from "../errors.js";
import { checkStoreArg } from "../store/store-check.js";
import { checkOptionalMs, hasMethods, isOptionObject, optionFields, readExactOptions, readOptions } from "../option-values.js";
import type { RemoteRuns, ScheduleRouting } from "../workflow/schedules/schedule-routing.js";
import type { WorkflowRuntime } from "../workflow/workflow-runtime.js";
import { describeValue } from "../option-values.js";

/** Where a runtime runs in a sharded deployment (a `ShardTerm` has these). */
export interface ShardPlace {
  /** The sharded store's name. */
  readonly name: string;
  /** This runtime's shard. */
  readonly shard: number;
  /** How many shards the store has. */
  readonly shards: number;
}

/** Options of {@link routeShardSchedules}. */
export interface ShardSchedulesOptions {
  /** How long the home shard waits for another shard's owner to accept a tick's run. Default: the client's, 30,000 ms. */
  readonly timeoutMs?: number;
}

/** What {@link routeShardSchedules} returns: close it when the shard's work stops. */
export interface ShardSchedules {
  close(): Promise<void>;
}

/**
 * Routes the schedules of `runtime`, the runtime of one shard, so that it
 * decides only the schedules homed on its shard and starts each tick's run
 * on the run's own shard (see the module documentation). Call it in the
 * shard's `start`, before the runtime's worker starts. Every shard's
 * owner must serve its client inbox (`serveClients`), and every shard's
 * runtime use the same step queue and memo prefix.
 *
 * @example
 * start: async (term) => {
 *   const queue = await Queue.open(term.guard(store), term.storeName);
 *   const runtime = WorkflowRuntime.builder(queue, store, steps, hook).build();
 *   const routing = routeShardSchedules(runtime, store, term);
 *   await upsertSchedules(runtime, app.schedules);
 *   ...
 * }
 */
export function routeShardSchedules(runtime: WorkflowRuntime, store: ObjectStore, place: ShardPlace, opts: ShardSchedulesOptions = {}): ShardSchedules {
  // The runtime's parts, read once: a revoked Proxy or a getter that throws is refused by name.
  const rt = readOptions(runtime, ["schedules", "queueName", "memoStore"], "runtime", "routeShardSchedules' runtime");
  const memoPrefix = isOptionObject(rt.memoStore) ? readOptions(rt.memoStore, ["prefix"], "runtime.memoStore").prefix : undefined;
  if (!hasMethods(rt.schedules, ["routeBy"]) || typeof rt.queueName !== "string" || typeof memoPrefix !== "string")
    throw new ValidationError(`routeShardSchedules takes a WorkflowRuntime (schedules, queueName, memoStore), got ${describeValue(runtime)}`);
  const schedules = rt.schedules as WorkflowRuntime["schedules"];
  const queueName = rt.queueName;
  if (!hasMethods(store, ["get", "put", "list", "delete"]))
    throw new ValidationError(`routeShardSchedules takes an ObjectStore (get, put, list, delete), got ${describeValue(store)}`);
  checkStoreArg("routeShardSchedules's store", store);
  const needs = "routeShardSchedules needs the shard's place { name, shard, shards } (a ShardTerm)";
  // Read once: a revoked Proxy or a getter that throws is refused by name, never a TypeError.
  const p = isOptionObject(place) ? readOptions(place, ["name", "shard", "shards"], "place") : undefined;
  if (p === undefined) throw new ValidationError(`${needs}, got ${describeValue(place)}`);
  const { name, shard, shards } = p;
  if (
    typeof shards !== "number" ||
    !Number.isInteger(shards) ||
    shards < 1 ||
    typeof shard !== "number" ||
    !Number.isInteger(shard) ||
    shard < 0 ||
    shard >= shards
  )
    throw new ValidationError(`${needs}, got shard ${describeValue(shard)} of ${describeValue(shards)}`);
  if (typeof name !== "string") throw new ValidationError(`${needs}, got name ${describeValue(name)}`);
  const { timeoutMs } = readExactOptions(opts, optionFields<ShardSchedulesOptions>({ timeoutMs: true }), "ShardSchedulesOptions");
  checkOptionalMs("ShardSchedulesOptions.timeoutMs", timeoutMs, 1, 24 * 3600 * 1000);
  const clients = new Map<number, Promise<TaqubaClient>>();
  const clientOf = (i: number): Promise<TaqubaClient> => {
    let c = clients.get(i);
    if (c === undefined) {
      c = TaqubaClient.open(store, {
        name: shardStoreName(name, i),
        queueName,
        memoPrefix,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      });
      // A failed open (the store was unreachable) is tried again at the next use.
      c.catch(() => clients.delete(i));
      clients.set(i, c);
    }
    return c;
  };
  const remotes = new Map<number, RemoteRuns>();
  const routing: ScheduleRouting = {
    decides: (scheduleId) => shardOfSchedule(scheduleId, shards) === shard,
    runsOf: (runId) => {
      const i = shardOfRun(runId, shards);
      if (i === shard) return undefined;
      let r = remotes.get(i);
      if (r === undefined) {
        r = {
          // A request retried while that shard's owner was down may be applied after the run ended: it must not start it again.
          submit: async (spec) => (await clientOf(i)).submitUnlessKnown(spec),
          status: async (id) => (await clientOf(i)).status(id),
        };
        remotes.set(i, r);
      }
      return r;
    },
  };
  schedules.routeBy(routing);
  return {
    async close() {
      const open = [...clients.values()];
      clients.clear();
      await Promise.all(open.map((c) => c.then((x) => x.close()).catch(() => undefined)));
    },
  };
}
