/**
 * @module `taquba schedules pause|resume|trigger|backfill` against a
 * running owner over a real directory store: each command goes through the
 * client inbox and the owner applies it; exit codes and messages for an
 * unknown schedule, a bad or empty range and absurd dates, which write no
 * request; a trigger request replayed after a crash starts one run.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import {
  LocalStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  ScheduleNotFoundError,
  serveClients,
  StepOutcome,
  TaqubaClient,
  ValidationError,
  WorkflowRuntime,
  type ClientInbox,
  type RunnerHandle,
} from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { monotonicFactory } from "ulid";
import { decodeAnswer, encodeRequest } from "../../runtime/client/request-codec.js";
import { answerKey, requestKey } from "../../runtime/client/inbox-layout.js";
import { taquba } from "./cli-process.js";

const tempDir = useTempDirs("taquba-schedules-write-cli-");
const T0 = Date.parse("2026-03-02T10:00:30Z");

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

interface Owner {
  dir: string;
  clock: MockClock;
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle;
  inbox: ClientInbox;
  stop(): Promise<void>;
}
const owners: Owner[] = [];
afterEach(async () => {
  for (const o of owners.splice(0)) await o.stop();
});

/** An owner whose scheduler runs on a mock clock: no tick is due unless the test moves it. */
async function owner(dir: string, clock = new MockClock(T0)): Promise<Owner> {
  const store = new LocalStore(dir);
  const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
  const worker = runtime.spawn();
  const inbox = serveClients(queue, runtime, { store, listIntervalMs: 50 });
  const o: Owner = {
    dir,
    clock,
    queue,
    runtime,
    worker,
    inbox,
    async stop() {
      owners.splice(owners.indexOf(o), 1);
      await inbox.stop();
      await worker.shutdown();
      await queue.close();
    },
  };
  owners.push(o);
  return o;
}

async function requestsIn(dir: string): Promise<string[]> {
  const names = await readdir(join(dir, "app", "inbox", "workflow-steps", "requests")).catch(() => [] as string[]);
  return names.filter((n) => n !== "~keep");
}

describe("taquba schedules pause|resume|trigger|backfill", () => {
  it("pauses, resumes, triggers and backfills through the owner, with the exit codes scripts branch on", async () => {
    const dir = await tempDir();
    const o = await owner(dir);
    await o.runtime.schedules.upsert({ id: "hourly", cron: "0 * * * *", run: { input: new Uint8Array([7]) } });
    const url = pathToFileURL(dir).href;
    const cli = async (...words: string[]) => {
      const t = capture();
      const code = await main([...words.slice(0, 2), url, ...words.slice(2), "--name", "app"], t.io);
      return { code, out: t.out.join("\n"), err: t.err.join("\n") };
    };

    const paused = await cli("schedules", "pause", "hourly");
    expect(paused.code, paused.err).toBe(EXIT.ok);
    expect(paused.out).toBe("schedule hourly paused; next tick -");
    expect((await o.runtime.schedules.get("hourly"))!.paused).toBe(true);

    const resumed = await cli("schedules", "resume", "hourly", "--json");
    expect(resumed.code, resumed.err).toBe(EXIT.ok);
    expect(JSON.parse(resumed.out)).toMatchObject({ id: "hourly", paused: false, nextTickMs: Date.parse("2026-03-02T11:00:00Z") });

    const triggered = await cli("schedules", "trigger", "hourly", "--json");
    expect(triggered.code, triggered.err).toBe(EXIT.ok);
    const fire = JSON.parse(triggered.out) as { runId: string; tickMs: number; newlySubmitted: boolean };
    // The run id carries the time of the request (the CLI's clock), so a replayed request names the same run.
    expect(fire).toEqual({ runId: `sched-hourly-now${fire.tickMs}`, tickMs: fire.tickMs, newlySubmitted: true });
    expect(Math.abs(fire.tickMs - Date.now())).toBeLessThan(60_000);
    expect((await o.runtime.status(fire.runId))?.state).toBeDefined();

    const back = await cli("schedules", "backfill", "hourly", "--from", "2026-03-02T06:00:00Z", "--to", "2026-03-02T08:00:00Z");
    expect(back.code, back.err).toBe(EXIT.ok);
    expect(back.out).toContain("sched-hourly-1772431200000");
    expect(back.out).toContain("schedule hourly: 3 runs started, 0 already started before");
    const again = await cli("schedules", "backfill", "hourly", "--from", "2026-03-02T07:00:00Z", "--to", "2026-03-02T09:00:00Z", "--json");
    expect(again.code, again.err).toBe(EXIT.ok);
    const doc = JSON.parse(again.out) as { runs: { tickMs: number; newlySubmitted: boolean }[] };
    expect(doc.runs.map((r) => [new Date(r.tickMs).toISOString(), r.newlySubmitted])).toEqual([
      ["2026-03-02T07:00:00.000Z", false],
      ["2026-03-02T08:00:00.000Z", false],
      ["2026-03-02T09:00:00.000Z", true],
    ]);
    for (const h of ["06", "07", "08", "09"]) expect(await o.runtime.status(`sched-hourly-${Date.parse(`2026-03-02T${h}:00:00Z`)}`)).not.toBeNull();
    expect(o.inbox.stats.deadLettered).toBe(0);
  }, 60_000);

  it("refuses an unknown schedule, a bad range and absurd dates before writing any request", async () => {
    const dir = await tempDir();
    const o = await owner(dir);
    await o.runtime.schedules.upsert({ id: "yearly", cron: "0 0 1 1 *", run: { input: new Uint8Array([1]) } });
    await o.runtime.schedules.upsert({ id: "minutely", cron: "* * * * *", run: { input: new Uint8Array([1]) } });
    const url = pathToFileURL(dir).href;
    const cli = async (...words: string[]) => {
      const t = capture();
      const code = await main([...words.slice(0, 2), url, ...words.slice(2), "--name", "app"], t.io);
      return { code, err: t.err.join("\n") };
    };
    const applied = o.inbox.stats.applied;

    for (const verb of ["pause", "resume", "trigger"]) {
      const r = await cli("schedules", verb, "nightly");
      expect(r.code).toBe(EXIT.notFound);
      expect(r.err).toContain('no schedule "nightly" exists');
    }
    const unknown = await cli("schedules", "backfill", "nightly", "--from", "2026-01-01", "--to", "2026-02-01");
    expect(unknown.code).toBe(EXIT.notFound);
    expect((await cli("schedules", "pause", "../etc")).code).toBe(EXIT.usage);

    const reversed = await cli("schedules", "backfill", "yearly", "--from", "2026-02-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z");
    expect(reversed.code).toBe(EXIT.usage);
    expect(reversed.err).toContain("--to (2026-01-01T00:00:00.000Z) is before --from (2026-02-01T00:00:00.000Z)");
    const missing = await cli("schedules", "backfill", "yearly", "--from", "2026-01-01");
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.err).toContain("backfill needs --from and --to");
    for (const bad of ["yesterday", "NaN", "1e30", "+275760-09-13T00:00:00Z", "99999-01-01"]) {
      const r = await cli("schedules", "backfill", "yearly", "--from", bad, "--to", "2026-01-01");
      expect(r.code, bad).toBe(EXIT.usage);
      expect(r.err, bad).toContain("--from takes a duration back from now");
    }
    const tooLong = await cli("schedules", "backfill", "minutely", "--from", "2026-01-01", "--to", "9999-12-31");
    expect(tooLong.code).toBe(EXIT.usage);
    expect(tooLong.err).toContain('the range covers more than 10000 ticks of schedule "minutely" (* * * * *); split it into shorter ranges');
    const empty = await cli("schedules", "backfill", "yearly", "--from", "2026-02-01", "--to", "2026-03-01");
    expect(empty.code).toBe(EXIT.refused);
    expect(empty.err).toContain("has no tick from 2026-02-01T00:00:00.000Z to 2026-03-01T00:00:00.000Z: nothing to backfill");

    expect(await requestsIn(dir)).toEqual([]);
    expect(o.inbox.stats.applied).toBe(applied);
    expect(await o.runtime.schedules.get("yearly")).toMatchObject({ paused: false, lastRunId: null });
  }, 60_000);

  it("a client's schedule commands: typed errors from the owner, checks before writing", async () => {
    const dir = await tempDir();
    const o = await owner(dir);
    await o.runtime.schedules.upsert({ id: "hourly", cron: "0 * * * *", run: { input: new Uint8Array([7]) } });
    const client = await TaqubaClient.open(new LocalStore(dir), { name: "app", pollIntervalMs: 200 });
    try {
      await expect(client.pauseSchedule("gone")).rejects.toBeInstanceOf(ScheduleNotFoundError);
      await expect(client.pauseSchedule("gone")).rejects.toMatchObject({ scheduleId: "gone" });
      await expect(client.backfillSchedule("hourly", Number.NaN, 0)).rejects.toBeInstanceOf(ValidationError);
      await expect(client.backfillSchedule("hourly", 1e30, 1e30)).rejects.toBeInstanceOf(ValidationError);
      await expect(client.backfillSchedule("hourly", 10, 5)).rejects.toBeInstanceOf(ValidationError);
      await expect(client.triggerSchedule("a/b")).rejects.toBeInstanceOf(ValidationError);
      // The owner refuses what the client cannot check (the runtime's own error): a trigger's failing input handler.
      await o.runtime.schedules.upsert({
        id: "computed",
        cron: "0 * * * *",
        run: {
          input: () => {
            throw new Error("no data for this hour");
          },
        },
      });
      const refused = await client.triggerSchedule("computed").catch((e: unknown) => e);
      expect(refused).toMatchObject({ ownerCode: "SCHEDULE_INPUT_FAILED" });
      expect((refused as Error).message).toContain("its input handler threw: no data for this hour");
      const info = await client.pauseSchedule("hourly");
      expect(info).toMatchObject({ id: "hourly", paused: true, nextTickMs: null });
      expect(await o.runtime.schedules.get("hourly")).toMatchObject({ paused: true });
    } finally {
      await client.close();
    }
  }, 60_000);

  it("a trigger request the owner applied but did not answer (it crashed) starts no second run when the next owner replays it", async () => {
    const dir = await tempDir();
    const clock = new MockClock(T0);
    const store = new LocalStore(dir);
    const first = await owner(dir, clock);
    await first.runtime.schedules.upsert({ id: "hourly", cron: "0 * * * *", run: { input: new Uint8Array([7]) } });
    const id = monotonicFactory()(T0);
    const request = encodeRequest({ op: "schedule", action: "trigger", scheduleId: "hourly" });
    await store.put(`app/${requestKey("workflow-steps", id)}`, request);
    await first.inbox.drain();
    expect(first.inbox.stats.applied).toBe(1);
    await first.stop();
    // As if the owner had crashed after its commit: the request is still there and unanswered.
    await store.delete(`app/${answerKey("workflow-steps", id)}`);
    await store.put(`app/${requestKey("workflow-steps", id)}`, request);
    clock.advance(5_000);
    const second = await owner(dir, clock);
    await second.inbox.drain();
    expect(second.inbox.stats).toMatchObject({ applied: 0, replayed: 1 });
    const answer = decodeAnswer((await store.get(`app/${answerKey("workflow-steps", id)}`))!.body);
    expect(answer).toEqual({ ok: true, value: { tickMs: T0, runId: `sched-hourly-now${T0}`, newlySubmitted: true } });
    expect((await second.runtime.schedules.get("hourly"))!.lastRunId).toBe(`sched-hourly-now${T0}`);
    const runs = await second.runtime.view().listRuns({});
    expect(runs.runs.map((r) => r.runId)).toEqual([`sched-hourly-now${T0}`]);
    // Another trigger request sent in the same millisecond is a trigger of its own: it starts its own run.
    const other = monotonicFactory()(T0);
    await store.put(`app/${requestKey("workflow-steps", other)}`, request);
    await second.inbox.drain();
    const answered = decodeAnswer((await store.get(`app/${answerKey("workflow-steps", other)}`))!.body);
    expect(answered).toEqual({ ok: true, value: { tickMs: T0, runId: `sched-hourly-now${T0}_2`, newlySubmitted: true } });
    // And the first request replayed once more still starts nothing. The answer goes first: the owner
    // serving now (woken by the put) may answer the request at once, and that answer must stay.
    await store.delete(`app/${answerKey("workflow-steps", id)}`);
    await store.put(`app/${requestKey("workflow-steps", id)}`, request);
    await second.inbox.drain();
    expect(decodeAnswer((await store.get(`app/${answerKey("workflow-steps", id)}`))!.body)).toEqual(answer);
    const after = await second.runtime.view().listRuns({});
    expect(after.runs.map((r) => r.runId).sort()).toEqual([`sched-hourly-now${T0}`, `sched-hourly-now${T0}_2`]);
  }, 60_000);

  // Three runs of the bin, each about 0.7 s of CPU: 21 s of wall time at load 21 on two cores. The limit
  // guards against a hang and is stretched by the load (support/load.ts).
  it("the bin: exit 0 for a pause through the owner, 3 for an unknown schedule, 2 for a bad range", { timeout: loadLimitTimeout(30_000) }, () =>
    withinLoadLimit(30_000, async () => {
      const dir = await tempDir();
      const o = await owner(dir);
      await o.runtime.schedules.upsert({ id: "hourly", cron: "0 * * * *", run: { input: new Uint8Array([7]) } });
      const url = pathToFileURL(dir).href;
      const ok = await taquba(["schedules", "pause", url, "hourly", "--name", "app"]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout.trim()).toBe("schedule hourly paused; next tick -");
      const gone = await taquba(["schedules", "trigger", url, "nightly", "--name", "app"]);
      expect(gone.code).toBe(3);
      expect(gone.stderr).toContain('no schedule "nightly" exists');
      const bad = await taquba(["schedules", "backfill", url, "hourly", "--from", "2026-02-01", "--to", "2026-01-01", "--name", "app"]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("is before --from");
    }),
  );
});
