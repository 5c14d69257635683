/**
 * @module The operator CLI and the dashboard's JSON API over records whose
 * numbers are out of their range, in a real store (a directory, and the S3
 * protocol server) beside a running owner: a run record with a step
 * priority of -1, a step pointer at step -1, an end record with a final
 * step of -1, a signal wait at step -1, a group member ended at -1 and a
 * schedule with a step priority of -1 (what a definition check of an
 * earlier version took). Each command that meets one answers an error
 * naming the run or schedule, lists the healthy items beside it, and
 * exits; the dashboard's pages (in the headless browser) name each
 * damaged run and group below the healthy ones; the damaged schedule is
 * removed with `taquba schedules remove` and upserted again.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect } from "vitest";
import { serveClients, type ClientInbox, type ObjectStore, type Queue, type WorkflowRuntime } from "../../runtime/index.js";
import { openOwnerRuntime, waitingSteps } from "./fixtures/signal-owner.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { OperatorSession } from "../../operator/cli/session.js";
import { Operations } from "../../operator/inspect/operations.js";
import { startDashboard } from "../../operator/dashboard/server.js";
import { runKey, signalWaitKey, stepPointerKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { scheduleKey } from "../../runtime/workflow/schedules/schedule-record.js";
import { scenarioOnBothStores } from "./fixtures/on-both-stores.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";
import { findBrowser, launchBrowser } from "../support/browser.js";
import { acceptDialogs, waitText } from "./dashboard-page.js";

const tempDir = useTempDirs("taquba-damaged-cli-");
const browserFound = findBrowser();
const Q = "workflow-steps";
const enc = new TextEncoder();

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

interface Owner {
  queue: Queue;
  runtime: WorkflowRuntime;
  inbox: ClientInbox;
  logged: string[];
}
// A guard against a hang, stretched by the load: a scenario makes about 40 commands, each reading the store again.
const SCENARIO_MS = scaledForLoad(120_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

/**
 * An owner with healthy and damaged records. Runs that end do so while its
 * worker runs; then the worker stops (so nothing acts on the damage but the
 * reads under test), the active runs are submitted and the records damaged,
 * and the client inbox serves the CLI's writes.
 */
async function ownerWithDamage(store: ObjectStore): Promise<Owner> {
  const logged: string[] = [];
  const { queue, runtime } = await openOwnerRuntime(store, waitingSteps(), (_o, m) => logged.push(String(m)));
  const worker = runtime.spawn();
  for (const id of ["ok-ended", "bad-end"]) await runtime.submit({ runId: id, input: enc.encode("x") });
  await runtime.group("batch").submit([
    { key: "a", input: enc.encode("x") },
    { key: "b", input: enc.encode("x") },
  ]);
  for (const id of ["wait-ok", "wait-bad"]) await runtime.submit({ runId: id, input: enc.encode(`wait:${id}-key`) });
  for (const id of ["ok-ended", "bad-end"]) await runtime.wait(id);
  await until("both runs waiting for their signal", async () => (await runtime.listRuns({ state: "awaiting_signal" })).runs.length === 2, 30_000);
  await until("the group's members ended", async () => (await runtime.listRuns({ state: "succeeded" })).runs.length === 4, 30_000);
  await worker.shutdown();
  for (const id of ["ok-active", "bad-run", "bad-pointer"]) await runtime.submit({ runId: id, input: enc.encode("x") });
  await runtime.schedules.upsert({ id: "nightly", cron: "0 2 * * *", run: { input: enc.encode("n") } });
  await runtime.schedules.upsert({ id: "legacy", cron: "0 3 * * *", run: { input: enc.encode("l"), options: { priority: 2 } } });

  const damage = async (key: string, change: Record<string, unknown>) => {
    const bytes = await queue.kvGet(key);
    expect(bytes, key).not.toBeNull();
    await queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
  };
  await damage(runKey(Q, "bad-run"), { priority: -1 });
  await damage(stepPointerKey(Q, "bad-pointer"), { step: -1 });
  await damage(terminalRecordKey(Q, "bad-end"), { finalStep: -1 });
  await damage(signalWaitKey(Q, "wait-bad-key"), { step: -1 });
  // A schedule an earlier version wrote: its definition check took any integer as the step priority.
  await damage(scheduleKey(Q, "legacy"), { priority: -1 });
  const members = (await queue.kvScan("workflow/groups/", { limit: 10 })).entries;
  expect(members.length).toBe(2);
  await queue.kvPut(members[0]!.key, new Uint8Array(pack({ ...(unpack(members[0]!.value) as Record<string, unknown>), terminatedAtMs: -1 })));

  const inbox = serveClients(queue, runtime, { store, listIntervalMs: 50 });
  stops.push(async () => {
    await inbox.stop();
    await queue.close();
  });
  return { queue, runtime, inbox, logged };
}

/** The dashboard's pages in the headless browser: the healthy items listed, each damaged one named with its reason; a damaged run's page says what is wrong. */
async function checkPages(address: string): Promise<void> {
  const browser = await launchBrowser((browserFound as { path: string }).path);
  try {
    const page = await browser.browser.newPage();
    await page.goto(`${address}#/runs`);
    await waitText(page, "main", "ok-ended");
    await waitText(page, "#unreadable", "3 runs could not be read");
    for (const [id, says] of [
      ["bad-run", "step priority of -1"],
      ["bad-pointer", "holds step -1"],
      ["bad-end", "final step of -1"],
    ] as const) {
      await waitText(page, `[data-unreadable="${id}"]`, says);
    }
    await page.goto(`${address}#/run/bad-pointer`);
    await waitText(page, "#page-error", "holds step -1");
    // The damaged run's page offers the repair: the question names the damage (from a dry run), and the run then shows as failed.
    const dialogs = acceptDialogs(page);
    await page.click('button[data-action="repair"]');
    await waitText(page, "main", "repaired by an operator: its step pointer was damaged");
    expect(dialogs).toEqual([
      expect.stringMatching(
        /^Repair run bad-pointer\? its step pointer is damaged \(step pointer holds step -1.*\)\. It ends failed, saying it was repaired\.$/,
      ),
    ]);
    await page.goto(`${address}#/groups`);
    await waitText(page, "[data-unreadable=batch]", "end time of -1");
    await waitText(page, "[data-unreadable=batch]", "mend it with taquba runs repair");
    await page.goto(`${address}#/waiting`);
    await waitText(page, "main", "wait-ok-key");
    // The server answered every page: the runs page loads again.
    await page.goto(`${address}#/runs`);
    await waitText(page, "main", "ok-active");
  } finally {
    await browser.close();
  }
}

async function scenario(store: ObjectStore, url: string, withBrowser = false): Promise<void> {
  const owner = await ownerWithDamage(store);
  const cli = async (words: string, ...rest: string[]) => {
    const t = capture();
    const code = await main([...words.split(" "), url, ...rest, "--name", "app", "--timeout", "60000"], t.io);
    return { code, out: t.out.join("\n"), err: t.err.join("\n") };
  };

  // runs list: the healthy runs, and one line per damaged run naming it.
  const listed = await cli("runs list", "--json");
  expect(listed.code, listed.err).toBe(EXIT.ok);
  const page = JSON.parse(listed.out) as { runs: { runId: string; state: string; step: number }[]; unreadable: { runId: string; reason: string }[] };
  const ids = page.runs.map((r) => r.runId);
  for (const id of ["ok-ended", "ok-active", "wait-ok"]) expect(ids).toContain(id);
  expect(page.unreadable.map((u) => u.runId).sort()).toEqual(["bad-end", "bad-pointer", "bad-run"]);
  for (const r of page.runs) expect(r.step, r.runId).toBeGreaterThanOrEqual(0);
  for (const u of page.unreadable) {
    expect(u.reason).toContain(`run "${u.runId}": its `);
    expect(u.reason).not.toContain("workflow/");
    expect(u.reason).not.toContain("remove the store's data");
  }
  const table = await cli("runs list");
  expect(table.code).toBe(EXIT.ok);
  expect(table.out).toContain("ok-active");
  expect(table.err).toMatch(/run bad-run could not be read: .*step priority of -1/);
  expect(table.err).toMatch(/run bad-pointer could not be read: .*holds step -1/);
  expect(table.err).toMatch(/run bad-end could not be read: .*final step of -1/);

  // runs show: the damaged run's error names it and the field; a healthy run shows.
  for (const [id, says] of [
    ["bad-run", /step priority of -1/],
    ["bad-pointer", /holds step -1/],
    ["bad-end", /final step of -1/],
  ] as const) {
    const shown = await cli("runs show", id);
    expect(shown.code, id).toBe(EXIT.failed);
    expect(shown.err).toContain(id);
    expect(shown.err).toMatch(says);
    expect(shown.err).toContain(`run "${id}": its `);
    expect(shown.err).toMatch(
      new RegExp(`is damaged \\(.*\\); mend it with taquba runs repair "${id}" .* or restore the store from a backup; the other runs are not affected`),
    );
    expect(shown.err).not.toContain("workflow/");
  }
  expect((await cli("runs show", "ok-ended")).code).toBe(EXIT.ok);

  // Waiting runs: the healthy waiter is listed with its key; the one whose wait record is damaged is not shown as waiting on a wrong step.
  const waiting = await cli("runs list", "--state", "awaiting_signal", "--json");
  expect(waiting.code, waiting.err).toBe(EXIT.ok);
  const waitPage = JSON.parse(waiting.out) as { runs: { runId: string; step: number; signal?: { key: string } }[] };
  expect(waitPage.runs.find((r) => r.runId === "wait-ok")?.signal?.key).toBe("wait-ok-key");
  for (const r of waitPage.runs) expect(r.step).toBe(1);

  // Groups: the group with a damaged member is reported by its id, not counted; its page is an error naming the member's record.
  const groups = await cli("groups list", "--json");
  expect(groups.code, groups.err).toBe(EXIT.ok);
  const groupPage = JSON.parse(groups.out) as {
    groups: { groupId: string }[];
    unreadable: { groupId: string; reason: string; damage?: Record<string, unknown> }[];
  };
  expect(groupPage.groups).toEqual([]);
  expect(groupPage.unreadable.map((u) => u.groupId)).toEqual(["batch"]);
  // The damage comes as fields from the layer that read it, and the reason is built from them: it names the member's run to repair.
  const memberA = (await owner.runtime.listRuns({ limit: 100 })).runs.find((r) => r.group?.key === "a")!.runId;
  expect(groupPage.unreadable[0]!.damage).toEqual({ record: "member", memberKey: "a", runId: memberA, detail: expect.stringMatching(/end time of -1/) });
  expect(groupPage.unreadable[0]!.reason).toMatch(/group "batch" could not be counted: member "a" of a run group: its record is damaged \(.*end time of -1/);
  expect(groupPage.unreadable[0]!.reason).toContain(`mend it with taquba runs repair "${memberA}"`);
  expect(groupPage.unreadable[0]!.reason).not.toContain("workflow/");
  const groupTable = await cli("groups list");
  expect(groupTable.code).toBe(EXIT.ok);
  expect(groupTable.err).toMatch(/group "batch" could not be counted/);
  const group = await cli("groups show", "batch");
  expect(group.code).toBe(EXIT.failed);
  expect(group.err).toMatch(/end time of -1/);

  // Queue health and dead letters read no workflow record.
  expect((await cli("queue stats")).code).toBe(EXIT.ok);
  expect((await cli("dead list")).code).toBe(EXIT.ok);

  // Writes through the owner: cancelling the damaged run is refused with its error; the healthy run is cancelled.
  const cancelBad = await cli("runs cancel", "bad-pointer");
  expect(cancelBad.code).toBe(EXIT.failed);
  expect(cancelBad.err).toMatch(/run "bad-pointer": its step pointer is damaged \(step pointer holds step -1/);
  expect((await cli("runs cancel", "ok-active")).code).toBe(EXIT.ok);
  // A signal to the damaged wait is refused naming the wait; one to the healthy wait is delivered.
  const signalBad = await cli("signal", "wait-bad-key", "--json", "{}");
  expect(signalBad.code).toBe(EXIT.failed);
  expect(signalBad.err).toMatch(/^the wait for signal "wait-bad-key" is damaged \(signal wait record lacks its job, run or step/);

  // Schedules: the healthy one listed, the damaged one reported by id, with its priority and the way out.
  const schedules = await cli("schedules list");
  expect(schedules.code, schedules.err).toBe(EXIT.ok);
  expect(schedules.out).toMatch(/^nightly\s+0 2 \* \* \*/m);
  expect(schedules.out).not.toContain("legacy");
  expect(schedules.err).toMatch(/schedule legacy could not be read: the record of schedule "legacy" has a step priority of -1, outside its range/);
  expect(schedules.err).toMatch(/taquba schedules remove/);
  expect(schedules.err).not.toContain("workflow/schedules/");
  const schedulesJson = JSON.parse((await cli("schedules list", "--json")).out) as {
    schedules: { id: string }[];
    unreadable: { id: string; reason: string }[];
  };
  expect(schedulesJson.schedules.map((s) => s.id)).toEqual(["nightly"]);
  expect(schedulesJson.unreadable.map((u) => u.id)).toEqual(["legacy"]);
  // A command on the damaged schedule names it and writes nothing; one on the healthy schedule is applied.
  const pauseBad = await cli("schedules pause", "legacy");
  expect(pauseBad.code).toBe(EXIT.failed);
  expect(pauseBad.err).toMatch(/^schedule "legacy": its record is damaged \(the record of schedule "legacy" has a step priority of -1/);
  expect(pauseBad.err).toContain("taquba schedules remove");
  expect((await cli("schedules pause", "nightly")).code).toBe(EXIT.ok);
  expect((await owner.runtime.schedules.get("nightly"))?.paused).toBe(true);

  // The dashboard's JSON API over the same store: every listing answers with the healthy items; a damaged run's page is an error naming it.
  const session = new OperatorSession({ storeUrl: url, name: "app", stepQueue: Q, store });
  const dashboard = await startDashboard({
    ops: new Operations(session),
    refresh: async () => (await session.reader()).refresh(),
    info: { name: "app", stepQueue: Q, store: "test" },
    port: 0,
  });
  try {
    const get = async (path: string) => {
      const res = await fetch(new URL(path, dashboard.url));
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const runs = await get("/api/runs");
    expect(runs.status).toBe(200);
    expect((runs.body["runs"] as { runId: string }[]).map((r) => r.runId)).toContain("ok-ended");
    expect((runs.body["unreadable"] as { runId: string }[]).map((u) => u.runId).sort()).toEqual(["bad-end", "bad-pointer", "bad-run"]);
    for (const [id, says] of [
      ["bad-run", /step priority of -1/],
      ["bad-pointer", /holds step -1/],
      ["bad-end", /final step of -1/],
    ] as const) {
      const r = await get(`/api/runs/${id}`);
      expect(r.status, id).toBe(500);
      expect((r.body["error"] as { message: string; code: string }).message).toMatch(says);
      expect((r.body["error"] as { code: string }).code).toBe("STORE_CORRUPTED");
      expect((r.body["error"] as { message: string }).message).toContain(`run "${id}": its `);
    }
    expect((await get("/api/runs/ok-ended")).status).toBe(200);
    expect((await get("/api/waiting")).status).toBe(200);
    expect((await get("/api/groups")).status).toBe(200);
    expect([200, 500]).toContain((await get("/api/groups/batch")).status);
    expect((await get("/api/health")).status).toBe(200);
    expect((await get("/api/dead")).status).toBe(200);
    // The server still answers after every error.
    expect((await get("/api/info")).status).toBe(200);
    if (withBrowser) await checkPages(dashboard.url);
  } finally {
    await dashboard.close();
    await session.close();
  }

  expect((await cli("signal", "wait-ok-key", "--json", "{}")).code).toBe(EXIT.ok);

  // The way out: `taquba schedules remove` deletes the damaged record without reading it; upserted again, it lists and ticks.
  const removed = await cli("schedules remove", "legacy");
  expect(removed.code, removed.err).toBe(EXIT.ok);
  expect(removed.out).toContain("schedule legacy removed");
  expect(await owner.runtime.schedules.get("legacy")).toBeNull();
  expect((await cli("schedules remove", "legacy")).code).toBe(EXIT.notFound);
  await owner.runtime.schedules.upsert({ id: "legacy", cron: "0 3 * * *", run: { input: enc.encode("l"), options: { priority: 2 } } });
  const after = await cli("schedules list");
  expect(after.code).toBe(EXIT.ok);
  expect(after.err).toBe("");
  expect(after.out).toMatch(/^legacy\s+0 3 \* \* \*/m);
}

describe("the operator tools over records holding numbers out of their range", () => {
  scenarioOnBothStores(tempDir, "damaged", (store, url) => scenario(store, url, !("missing" in browserFound)), SCENARIO_MS);
});
