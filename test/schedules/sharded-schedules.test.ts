/**
 * @module Schedules on a sharded store, in one process with a mock clock:
 * each schedule ticks on its home shard only, every tick starts exactly one
 * run across the shards, on the run id's own shard, also when the owner of
 * a home shard changes and when the shard a tick's run goes to is down
 * (its run starts once it is back), and commands on a schedule reach its
 * home shard through a client.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  createShards,
  LocalStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  routeShardSchedules,
  serveClients,
  StepOutcome,
  TaqubaClient,
  ValidationError,
  WorkflowRuntime,
  type ClientInbox,
  type RunnerHandle,
  type ShardSchedules,
} from "../../runtime/index.js";
import { shardOfRun, shardOfSchedule, shardStoreName } from "../../runtime/client/shard-route.js";
import { scheduleKey, tickRunId } from "../../runtime/workflow/schedules/schedule-record.js";
import { REMOTE_RETRY_MS } from "../../runtime/workflow/schedules/schedules.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { pathToFileURL } from "node:url";
import { EXIT, main } from "../../operator/cli/main.js";
import { enc, until } from "../workflow/helpers.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-sharded-schedules-");
const SHARDS = 3;
const MIN = 60_000;
const T0 = Date.parse("2026-01-05T00:00:30Z");
const IDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
/** How long a home shard waits for another shard's answer; TAQUBA_TEST_REMOTE_TIMEOUT_MS shortens it to make every answer late. */
const REMOTE_TIMEOUT_MS = Number(process.env.TAQUBA_TEST_REMOTE_TIMEOUT_MS ?? scaledForLoad(1_000));
/** The real-time limit of each wait for the shards to act: guards against a hang, stretched on a loaded machine. */
const WAIT_MS = scaledForLoad(20_000);

/**
 * A home shard whose request to another shard was not answered in time (a
 * slow machine) decides the tick again REMOTE_RETRY_MS later on the mock
 * clock: this moves the clock there, once per round of misses, never up to
 * `ceiling` (the next tick), so no tick is added. 0 turns it off.
 */
class RemoteRetries {
  ceiling = 0;
  constructor(readonly clock: MockClock) {}
  missed(): void {
    // The scheduler computes its retry time from the clock right after logging the miss: move the clock once it has.
    const at = this.clock.now() + REMOTE_RETRY_MS;
    setImmediate(() => {
      if (at < this.ceiling && at > this.clock.now()) this.clock.set(at);
    });
  }
}

/** Step-0 starts per run id, with the shard each ran on; a run started twice shows two step-0 jobs. */
class Recorder {
  readonly runs = new Map<string, { shards: Set<number>; jobs: Set<string> }>();
  runner(shard: number) {
    return {
      runStep: async (s: { runId: string; jobId: string; stepNumber: number; payload: Uint8Array }) => {
        if (s.stepNumber === 0) {
          const r = this.runs.get(s.runId) ?? { shards: new Set<number>(), jobs: new Set<string>() };
          r.shards.add(shard);
          r.jobs.add(s.jobId);
          this.runs.set(s.runId, r);
        }
        return StepOutcome.succeed(s.payload);
      },
    };
  }
}

interface Owner {
  shard: number;
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle;
  inbox: ClientInbox;
  routing: ShardSchedules;
  stop(): Promise<void>;
}
const owners = new Set<Owner>();
afterEach(async () => {
  for (const o of [...owners]) await o.stop();
});

/** What a shard's `start` does: its queue, runtime with routed schedules, the schedules registered, the inbox, the worker. */
async function openShard(store: LocalStore, clock: MockClock, rec: Recorder, shard: number, retries?: RemoteRetries): Promise<Owner> {
  const queue = await Queue.open(store, shardStoreName("app", shard), { clock, flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, rec.runner(shard), NoopTerminalHook)
    .logger({
      error: (o, m) => {
        if (process.env.SCHED_DEBUG) console.log("ERR", shard, m, o);
        if (/did not answer; the tick is decided again/.test(m)) retries?.missed();
      },
    })
    .build();
  const routing = routeShardSchedules(runtime, store, { name: "app", shard, shards: SHARDS }, { timeoutMs: REMOTE_TIMEOUT_MS });
  // Each shard registers the schedules homed there; a runtime of another shard refuses them (a copy there would never tick).
  for (const id of IDS) if (runtime.schedules.decides(id)) await runtime.schedules.upsert({ id, cron: "* * * * *", run: { input: enc(id) } });
  const inbox = serveClients(queue, runtime, { store, listIntervalMs: 20 });
  const worker = runtime.spawn();
  const o: Owner = {
    shard,
    queue,
    runtime,
    worker,
    inbox,
    routing,
    async stop() {
      owners.delete(o);
      await inbox.stop();
      await worker.shutdown();
      await routing.close();
      await queue.close();
    },
  };
  owners.add(o);
  return o;
}

/** Every (schedule, tick) in `ticks` ran exactly once, on its run id's shard, and nothing else ran. */
/**
 * Waits until every run submitted on any shard so far ran its first step
 * (no step job pending or claimed): a tick decided twice would have
 * submitted its second run by then, and it would show. A fixed pause could
 * end before a slow machine ran it.
 */
async function allStarted(shards: readonly Owner[]): Promise<void> {
  for (const s of shards) {
    await until(
      async () => {
        const st = await s.queue.view().stats("workflow-steps");
        return st.pending === 0 && st.claimed === 0;
      },
      `every run submitted on shard ${s.shard} started`,
      WAIT_MS,
    );
  }
}

function expectOnePerTick(rec: Recorder, ticks: number[]): void {
  const expected = IDS.flatMap((id) => ticks.map((t) => tickRunId(id, t))).sort();
  expect([...rec.runs.keys()].sort()).toEqual(expected);
  for (const [runId, r] of rec.runs) {
    expect([...r.shards], runId).toEqual([shardOfRun(runId, SHARDS)]);
    expect(r.jobs.size, runId).toBe(1);
  }
}

const allRan = (rec: Recorder, ticks: number[]) => () => IDS.every((id) => ticks.every((t) => rec.runs.has(tickRunId(id, t))));

describe("schedules on a sharded store", () => {
  it(
    "each tick starts exactly one run across the shards, on its run's shard, also across an owner change of a home shard",
    async () => {
      // The ids spread over every home shard, and their runs over every shard.
      expect(new Set(IDS.map((id) => shardOfSchedule(id, SHARDS))).size).toBe(SHARDS);
      const store = new LocalStore(await tempDir());
      await createShards(store, "app", SHARDS);
      const clock = new MockClock(T0);
      const rec = new Recorder();
      const retries = new RemoteRetries(clock);
      const shards: Owner[] = [];
      for (let i = 0; i < SHARDS; i++) shards.push(await openShard(store, clock, rec, i, retries));
      const ticks: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t = T0 + 30_000 + i * MIN;
        ticks.push(t);
        retries.ceiling = t + MIN;
        clock.set(t);
        await until(allRan(rec, ticks), `the runs of tick ${i}`, WAIT_MS);
      }
      // Every run so far ended (a step settling while its owner stops would wait out its lease on the mock clock).
      for (const runId of rec.runs.keys()) {
        const owner = shards[shardOfRun(runId, SHARDS)]!;
        await until(async () => (await owner.runtime.status(runId))?.state === "terminated", `${runId} ended`, WAIT_MS);
      }
      // A home shard's owner goes away and another process takes the shard over within the grace: its ticks go on, once.
      const home = shardOfSchedule("alpha", SHARDS);
      await shards[home]!.stop();
      const t3 = T0 + 30_000 + 3 * MIN;
      retries.ceiling = t3 + MIN;
      clock.set(t3 + 20_000);
      shards[home] = await openShard(store, clock, rec, home, retries);
      ticks.push(t3);
      await until(allRan(rec, ticks), "the runs of the tick after the owner change", WAIT_MS);
      // Each schedule's state lives on its home shard (written after a run on another shard was accepted).
      // A home shard whose request to the reopened shard was not answered in time (a slow machine) decides again
      // REMOTE_RETRY_MS later: `retries` moves the clock there, short of the next tick.
      for (const id of IDS) {
        const home = shards[shardOfSchedule(id, SHARDS)]!;
        await until(async () => (await home.runtime.schedules.get(id))?.lastRunId === tickRunId(id, t3), `${id} decided its tick`, WAIT_MS);
        expect(await home.runtime.schedules.get(id), id).toMatchObject({ lastTickMs: t3, lastRunId: tickRunId(id, t3) });
      }
      // Every run submitted so far started: nothing more ran than one run per tick.
      await allStarted(shards);
      expectOnePerTick(rec, ticks);
    },
    scaledForLoad(120_000),
  );

  it(
    "a tick whose run goes to a shard that is down starts that run once the shard is back",
    async () => {
      const store = new LocalStore(await tempDir());
      await createShards(store, "app", SHARDS);
      const clock = new MockClock(T0);
      const rec = new Recorder();
      const retries = new RemoteRetries(clock);
      const shards: Owner[] = [];
      for (let i = 0; i < SHARDS; i++) shards.push(await openShard(store, clock, rec, i, retries));
      const t1 = T0 + 30_000;
      // A schedule and tick whose run lives on another shard than the schedule's home.
      const [id, down] = IDS.map((x) => [x, shardOfRun(tickRunId(x, t1), SHARDS)] as const).find(([x, s]) => s !== shardOfSchedule(x, SHARDS))!;
      await shards[down]!.stop();
      clock.set(t1);
      // Schedules homed on the down shard do not tick while it is down (and catch up as their policy says).
      const others = IDS.filter((x) => shardOfRun(tickRunId(x, t1), SHARDS) !== down && shardOfSchedule(x, SHARDS) !== down);
      await until(() => others.every((x) => rec.runs.has(tickRunId(x, t1))), "the runs on the shards that are up", WAIT_MS);
      // The home shard tried, got no answer, and keeps the tick undecided.
      const home = shards[shardOfSchedule(id, SHARDS)]!;
      await until(async () => (await home.runtime.schedules.get(id))?.lastRunId === null, "the tick undecided", scaledForLoad(5_000));
      expect(rec.runs.has(tickRunId(id, t1))).toBe(false);
      shards[down] = await openShard(store, clock, rec, down, retries);
      // From here a request not answered in time (a slow machine) is decided again as the clock moves on, short of the next tick.
      retries.ceiling = t1 + MIN;
      clock.advance(REMOTE_RETRY_MS);
      // The down shard's own schedules see their tick within the grace, on time.
      await until(allRan(rec, [t1]), "every run of the tick", WAIT_MS);
      await until(async () => (await home.runtime.schedules.get(id))?.lastRunId === tickRunId(id, t1), "the tick decided", WAIT_MS);
      await allStarted(shards);
      expectOnePerTick(rec, [t1]);
    },
    scaledForLoad(120_000),
  );

  it(
    "commands on a schedule reach its home shard through a client and the CLI; a runtime of another shard refuses them",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      await createShards(store, "app", SHARDS);
      const clock = new MockClock(T0);
      const rec = new Recorder();
      const shards: Owner[] = [];
      for (let i = 0; i < SHARDS; i++) shards.push(await openShard(store, clock, rec, i));
      const client = await TaqubaClient.open(store, { name: "app", pollIntervalMs: 200 });
      try {
        const id = "beta";
        const home = shardOfSchedule(id, SHARDS);
        expect(await client.pauseSchedule(id)).toMatchObject({ id, paused: true });
        expect((await shards[home]!.runtime.schedules.get(id))!.paused).toBe(true);
        const other = shards[(home + 1) % SHARDS]!;
        // Each shard's runtime lists only the schedules homed there: the copies elsewhere have a state no one updates.
        for (const o of shards) {
          const homed = IDS.filter((x) => shardOfSchedule(x, SHARDS) === o.shard).sort();
          expect((await o.runtime.schedules.list()).map((x) => x.id).sort(), `shard ${o.shard}`).toEqual(homed);
        }
        expect(await other.runtime.schedules.get(id)).toBeNull();
        await expect(other.runtime.schedules.pause(id)).rejects.toThrow(ValidationError);
        await expect(other.runtime.schedules.trigger(id)).rejects.toThrow(/decided on another shard/);
        // An upsert there is refused too, and writes nothing: no inert copy on that shard.
        await expect(other.runtime.schedules.upsert({ id, cron: "*/5 * * * *", run: { input: enc(id) } })).rejects.toThrow(/decided on another shard/);
        expect(await other.queue.kvGet(scheduleKey(other.runtime.queueName, id))).toBeNull();
        // A remove there is refused as well, and deletes nothing: not a copy written before upsert was refused (put one
        // there), nor the schedule on its home shard, which keeps ticking.
        const homeRecord = (await shards[home]!.queue.kvGet(scheduleKey(shards[home]!.runtime.queueName, id)))!;
        await other.queue.kvPut(scheduleKey(other.runtime.queueName, id), homeRecord);
        await expect(other.runtime.schedules.remove(id)).rejects.toThrow(/decided on another shard.*home shard/);
        expect(await other.queue.kvGet(scheduleKey(other.runtime.queueName, id))).toEqual(homeRecord);
        await other.queue.kvDelete(scheduleKey(other.runtime.queueName, id));
        expect(await shards[home]!.runtime.schedules.get(id)).not.toBeNull();
        // A paused schedule does not tick; the others do.
        const t1 = T0 + 30_000;
        clock.set(t1);
        await until(() => IDS.filter((x) => x !== id).every((x) => rec.runs.has(tickRunId(x, t1))), "the other schedules' runs", WAIT_MS);
        const fire = await client.triggerSchedule(id);
        await until(() => rec.runs.has(fire.runId), "the triggered run", WAIT_MS);
        expect([...rec.runs.get(fire.runId)!.shards]).toEqual([shardOfRun(fire.runId, SHARDS)]);
        const fires = await client.backfillSchedule(id, T0 - 3 * MIN, T0);
        expect(fires.map((f) => f.runId)).toEqual([1, 2, 3].map((k) => tickRunId(id, T0 - 30_000 - (3 - k) * MIN)));
        await until(() => fires.every((f) => rec.runs.has(f.runId)), "the backfilled runs", WAIT_MS);
        for (const f of fires) expect([...rec.runs.get(f.runId)!.shards]).toEqual([shardOfRun(f.runId, SHARDS)]);
        expect(rec.runs.has(tickRunId(id, t1))).toBe(false);
        // The CLI lists each schedule once, from its home shard, and sends its commands there.
        const url = pathToFileURL(dir).href;
        const out: string[] = [];
        const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t), color: false };
        expect(await main(["schedules", "list", url, "--name", "app", "--json"], io)).toBe(EXIT.ok);
        const listed = (JSON.parse(out.join("\n")) as { schedules: { id: string; paused: boolean }[] }).schedules;
        expect(listed.map((x) => [x.id, x.paused])).toEqual([...IDS].sort().map((x) => [x, x === id]));
        out.length = 0;
        expect(await main(["schedules", "resume", url, id, "--name", "app"], io)).toBe(EXIT.ok);
        expect((await shards[home]!.runtime.schedules.get(id))!.paused).toBe(false);
      } finally {
        await client.close();
      }
    },
    scaledForLoad(120_000),
  );
});
