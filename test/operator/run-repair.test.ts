/**
 * @module `taquba runs repair` (and `TaqubaClient.repairRun`) over a real
 * store (a directory, and the S3 protocol server) beside a running owner:
 * a run record, a step pointer, an end record and a listing entry damaged
 * as an earlier version's checks let through (a number out of its range),
 * each mended through the owner's inbox. The dry run writes nothing; an
 * active run ends failed saying it was repaired, its step job removed and
 * its signal wait released, its group counting it failed; an ended run's
 * end record is rewritten; a listing entry is rewritten and its run goes
 * on. A healthy run and an unknown one are refused, a second repair is
 * refused as not damaged, and every other run reads as before. The
 * listings carry each damaged run's record and detail as fields.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect } from "vitest";
import { serveClients, type ObjectStore } from "../../runtime/index.js";
import { openOwnerRuntime, waitingSteps } from "./fixtures/signal-owner.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { runKey, signalWaitKey, stepPointerKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { runIndexPrefix } from "../../runtime/workflow/runs/run-index.js";
import { scenarioOnBothStores } from "./fixtures/on-both-stores.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-run-repair-");
const Q = "workflow-steps";
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(120_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

/** An owner whose worker stopped after the ended runs ended, with the active runs submitted and every kind of run record damaged. */
async function ownerWithDamage(store: ObjectStore) {
  const { queue, runtime } = await openOwnerRuntime(store, waitingSteps());
  const worker = runtime.spawn();
  for (const id of ["ok-ended", "bad-end", "bad-entry"]) await runtime.submit({ runId: id, input: enc.encode("x") });
  await runtime.submit({ runId: "bad-waiter", input: enc.encode("wait:waiter-key") });
  for (const id of ["ok-ended", "bad-end", "bad-entry"]) await runtime.wait(id);
  await until("the waiter waits", async () => (await runtime.status("bad-waiter"))?.step === 1, 30_000);
  await worker.shutdown();
  for (const id of ["ok-active", "bad-run", "bad-pointer"]) await runtime.submit({ runId: id, input: enc.encode("x") });
  await runtime.group("batch").submit([
    { key: "a", input: enc.encode("x") },
    { key: "b", input: enc.encode("x") },
  ]);

  const damage = async (key: string, change: Record<string, unknown>) => {
    const bytes = await queue.kvGet(key);
    expect(bytes, key).not.toBeNull();
    await queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
  };
  await damage(runKey(Q, "bad-run"), { priority: -1 });
  await damage(runKey(Q, "bad-waiter"), { maxAttempts: -1 });
  await damage(stepPointerKey(Q, "bad-pointer"), { step: -1 });
  await damage(terminalRecordKey(Q, "bad-end"), { finalStep: -1 });
  const entry = (await queue.kvScan(runIndexPrefix(Q), { limit: 100 })).entries.find((e) => e.key.endsWith("bad-entry"));
  await damage(entry!.key, { headers: 5 });
  const member = (await runtime.listRuns({ limit: 100 })).runs.find((r) => r.group?.key === "a");
  await damage(runKey(Q, member!.runId), { priority: -1 });

  const inbox = serveClients(queue, runtime, { store, listIntervalMs: 50 });
  stops.push(async () => {
    await inbox.stop();
    await queue.close();
  });
  return { queue, runtime, memberA: member!.runId };
}

async function scenario(store: ObjectStore, url: string): Promise<void> {
  const { queue, runtime, memberA } = await ownerWithDamage(store);
  const cli = async (words: string, ...rest: string[]) => {
    const t = capture();
    const code = await main([...words.split(" "), url, ...rest, "--name", "app", "--timeout", "60000"], t.io);
    return { code, out: t.out.join("\n"), err: t.err.join("\n") };
  };
  const okBefore = { ended: await runtime.outcome("ok-ended"), active: await runtime.status("ok-active") };

  // The listing carries each damaged run's record and detail as fields; its reason is built from them.
  const listed = JSON.parse((await cli("runs list", "--json", "--limit", "100")).out) as {
    unreadable: { runId: string; reason: string; damage?: { record: string; detail: string } }[];
  };
  const byRun = new Map(listed.unreadable.map((u) => [u.runId, u]));
  expect([...byRun.keys()].sort()).toEqual(["bad-end", "bad-entry", "bad-pointer", "bad-run", "bad-waiter", memberA].sort());
  expect(byRun.get("bad-run")?.damage).toEqual({ record: "run_record", detail: expect.stringMatching(/step priority of -1/) });
  expect(byRun.get("bad-pointer")?.damage).toEqual({ record: "step_pointer", detail: expect.stringMatching(/holds step -1/) });
  expect(byRun.get("bad-end")?.damage).toEqual({ record: "end_record", detail: expect.stringMatching(/final step of -1/) });
  expect(byRun.get("bad-entry")?.damage).toMatchObject({ record: "index_entry" });
  for (const u of listed.unreadable) {
    expect(u.reason).toMatch(new RegExp(`^run "${u.runId}": its (run record|step pointer|end record|listing entry) is damaged \\(`));
    expect(u.reason).toContain(`taquba runs repair "${u.runId}"`);
    expect(u.reason).not.toContain("workflow/");
  }

  // Refusals: a healthy active run, a healthy ended run, an unknown run, a bad run id. Nothing is written.
  const healthy = await cli("runs repair", "ok-active");
  expect(healthy.code).toBe(EXIT.refused);
  expect(healthy.err).toMatch(/run "ok-active" is not damaged: .*taquba runs cancel/);
  const ended = await cli("runs repair", "ok-ended");
  expect(ended.code).toBe(EXIT.refused);
  expect(ended.err).toMatch(/run "ok-ended" is not damaged: .*taquba runs retry/);
  expect((await cli("runs repair", "no-such-run")).code).toBe(EXIT.notFound);
  expect((await cli("runs repair", "bad id!")).code).toBe(EXIT.usage);

  // The dry run says what it would do and writes nothing.
  const dry = await cli("runs repair", "bad-run", "--dry-run", "--json");
  expect(dry.code, dry.err).toBe(EXIT.ok);
  const dryOut = JSON.parse(dry.out) as { action: string; dryRun: boolean; damaged: { record: string }[]; stepJobId?: string };
  expect(dryOut).toMatchObject({ runId: "bad-run", action: "ended_failed", dryRun: true, damaged: [{ record: "run_record" }] });
  const jobId = dryOut.stepJobId!;
  expect((await queue.view().job(jobId))?.state).toBe("pending");
  await expect(runtime.status("bad-run")).rejects.toThrow(/step priority of -1/);
  const dryText = await cli("runs repair", "bad-run", "--dry-run");
  expect(dryText.out).toMatch(/^run bad-run: its run record is damaged \(.*step priority of -1.*\)\ndry run, nothing written: the repair would end failed/);

  // An active run with a damaged run record: ends failed, saying so; its step job is removed in the same commit.
  const fixed = await cli("runs repair", "bad-run");
  expect(fixed.code, fixed.err).toBe(EXIT.ok);
  expect(fixed.out).toMatch(/repaired: the run ended failed, saying it was repaired, its step job \S+ is removed/);
  const out = await runtime.wait("bad-run");
  expect(out.termination.status).toBe("failed");
  expect(out.termination.error).toMatch(/^repaired by an operator: its run record was damaged \(.*step priority of -1/);
  expect(await queue.view().job(jobId), "the step job removed").toBeNull();
  // Safe twice: the second finds records that read.
  const again = await cli("runs repair", "bad-run");
  expect(again.code).toBe(EXIT.refused);
  expect(again.err).toMatch(/is not damaged/);

  // A damaged pointer (the job it names still read from it).
  const ptr = await cli("runs repair", "bad-pointer", "--json");
  expect(ptr.code, ptr.err).toBe(EXIT.ok);
  expect(JSON.parse(ptr.out)).toMatchObject({ action: "ended_failed", damaged: [{ record: "step_pointer" }] });
  expect((await runtime.wait("bad-pointer")).termination).toMatchObject({
    status: "failed",
    finalStep: 0,
    error: expect.stringMatching(/its step pointer was damaged/),
  });

  // A waiting run: its scheduled step removed and its signal wait released, so a signal to its key is buffered for none.
  expect(await queue.kvGet(signalWaitKey(Q, "waiter-key"))).not.toBeNull();
  expect((await cli("runs repair", "bad-waiter")).code).toBe(EXIT.ok);
  expect((await runtime.wait("bad-waiter")).termination).toMatchObject({ status: "failed", finalStep: 1 });
  expect(await queue.kvGet(signalWaitKey(Q, "waiter-key"))).toBeNull();

  // A group member: the group counts it failed.
  expect((await cli("runs repair", memberA)).code).toBe(EXIT.ok);
  expect(await runtime.group("batch").status()).toMatchObject({ failed: 1, pending: 1 });

  // An ended run's end record: rewritten as failed, repaired.
  const end = await cli("runs repair", "bad-end");
  expect(end.code, end.err).toBe(EXIT.ok);
  expect(end.out).toMatch(/its end record was rewritten/);
  expect(await runtime.outcome("bad-end")).toMatchObject({ status: "failed", error: expect.stringMatching(/^repaired by an operator: its end record/) });

  // A listing entry alone: rewritten, the run (ended succeeded) is not changed.
  const entry = await cli("runs repair", "bad-entry");
  expect(entry.code, entry.err).toBe(EXIT.ok);
  expect(entry.out).toMatch(/its listing entry was rewritten; the run itself is not changed/);
  expect((await runtime.outcome("bad-entry"))?.status).toBe("succeeded");

  // Every run lists now, none unreadable; the others read as before.
  const after = JSON.parse((await cli("runs list", "--json", "--limit", "100")).out) as { runs: { runId: string; state: string }[]; unreadable?: unknown[] };
  expect(after.unreadable ?? []).toEqual([]);
  const states = new Map(after.runs.map((r) => [r.runId, r.state]));
  for (const id of ["bad-run", "bad-pointer", "bad-waiter", "bad-end", memberA]) expect(states.get(id), id).toBe("failed");
  expect(states.get("bad-entry")).toBe("succeeded");
  expect(await runtime.outcome("ok-ended")).toEqual(okBefore.ended);
  expect(await runtime.status("ok-active")).toEqual(okBefore.active);
}

describe("taquba runs repair", () => {
  scenarioOnBothStores(tempDir, "repair", scenario, SCENARIO_MS);
});
