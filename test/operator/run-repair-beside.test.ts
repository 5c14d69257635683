/**
 * @module `taquba runs repair` of the records beside a run's own: the
 * signal wait its step waits on, its group member record, its entry under
 * its parent and its children's entries, each damaged as an earlier
 * version's checks let through (a field out of its range), over a real
 * store (a directory, and the S3 protocol server) beside a running owner
 * whose worker runs. An active run ends failed naming the record; an
 * ended run keeps its end and its member record is rewritten from it; a
 * child whose entry is damaged ends failed and its waiting parent joins
 * that end; a parent whose child's entry is damaged ends failed and the
 * child is settled by the policy its own record keeps (cancelled, or left
 * running when `abandon`), whether the parent was active or had ended
 * already (its own settlement of its children stopped at the entry).
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect } from "vitest";
import type { ObjectStore } from "../../runtime/index.js";
import { openServedOwner, waitingSteps } from "./fixtures/signal-owner.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { childEntryKey, groupMemberKey, signalWaitKey } from "../../runtime/workflow/records/kv-keys.js";
import { groupTag } from "../../runtime/workflow/groups/group-keys.js";
import { scenarioOnBothStores } from "./fixtures/on-both-stores.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-run-repair-beside-");
const Q = "workflow-steps";
const enc = new TextEncoder();
const dec = new TextDecoder();
const SCENARIO_MS = scaledForLoad(180_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

/**
 * Runs by input: `wait:<key>` waits an hour for a signal on its key, then
 * succeeds; `parent:<policy>` starts a child that waits, then joins its
 * end and succeeds with `<status>:<error>`; anything else succeeds.
 */
function owner(store: ObjectStore, children: Map<string, string>) {
  return async () => {
    const served = await openServedOwner(store, waitingSteps(children));
    stops.push(served.stop);
    return served;
  };
}

async function scenario(store: ObjectStore, url: string): Promise<void> {
  const children = new Map<string, string>();
  const { queue, runtime } = await owner(store, children)();
  const cli = async (words: string, ...rest: string[]) => {
    const t = capture();
    const code = await main([...words.split(" "), url, ...rest, "--name", "app", "--timeout", "60000"], t.io);
    return { code, out: t.out.join("\n"), err: t.err.join("\n") };
  };
  const repair = async (runId: string, ...rest: string[]) => {
    const r = await cli("runs repair", runId, "--json", ...rest);
    expect(r.code, r.err).toBe(EXIT.ok);
    return JSON.parse(r.out) as { action: string; damaged: { record: string; detail: string }[]; childrenCancelled?: string[]; dryRun: boolean };
  };
  const damage = async (key: string, change: Record<string, unknown>) => {
    const bytes = await queue.kvGet(key);
    expect(bytes, key).not.toBeNull();
    await queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
  };
  const step = async (id: string) => (await runtime.status(id))?.step;

  await runtime.submit({ runId: "waiter", input: enc.encode("wait:wk-bad") });
  await runtime.submit({ runId: "waiter-ok", input: enc.encode("wait:wk-ok") });
  await runtime.group("live").submit([
    { key: "a", input: enc.encode("wait:ga") },
    { key: "b", input: enc.encode("wait:gb") },
  ]);
  await runtime.group("done").submit([
    { key: "a", input: enc.encode("x") },
    { key: "b", input: enc.encode("x") },
  ]);
  for (const [id, policy] of [
    ["p-child", "cancel"],
    ["p-active", "cancel"],
    ["p-ended", "cancel"],
    ["p-abandon", "abandon"],
  ] as const)
    await runtime.submit({ runId: id, input: enc.encode(`parent:${policy}`) });
  for (const id of ["waiter", "waiter-ok", "p-child", "p-active", "p-ended", "p-abandon"])
    await until(
      `${id} waits`,
      async () => (await step(id)) === 1 && (!id.startsWith("p-") || (children.has(id) && (await step(children.get(id)!)) === 1)),
      SCENARIO_MS / 3,
    );
  await until("the done members ended", async () => (await runtime.group("done").status())?.succeeded === 2, SCENARIO_MS / 3);
  const members = (await runtime.listRuns({ limit: 100 })).runs.filter((r) => r.group !== undefined);
  const memberOf = (group: string, key: string) => members.find((r) => r.group?.id === group && r.group.key === key)!.runId;
  const liveA = memberOf("live", "a");
  const doneA = memberOf("done", "a");
  for (const id of [liveA, memberOf("live", "b")]) await until(`member ${id} waits`, async () => (await step(id)) === 1, SCENARIO_MS / 3);

  await damage(signalWaitKey(Q, "wk-bad"), { step: -1 });
  await damage(groupMemberKey(Q, groupTag("live"), "a"), { state: "lost" });
  await damage(groupMemberKey(Q, groupTag("done"), "a"), { terminatedAtMs: -1 });
  for (const id of ["p-child", "p-active", "p-ended", "p-abandon"]) await damage(childEntryKey(Q, id, children.get(id)!), { parentClose: "sometimes" });

  // A signal wait: the signal to it is refused naming it; the dry run names it and writes nothing.
  const refused = await cli("signal", "wk-bad", "--json", "{}");
  expect(refused.code).toBe(EXIT.failed);
  expect(refused.err).toMatch(/the wait for signal "wk-bad" is damaged .*taquba runs repair on the run that waits for that signal/);
  const dry = await repair("waiter", "--dry-run");
  expect(dry).toMatchObject({ action: "ended_failed", dryRun: true, damaged: [{ record: "signal_wait" }] });
  expect(dry.damaged[0]!.detail).toMatch(/^the wait for signal "wk-bad": signal wait record lacks its job, run or step/);
  expect(await step("waiter")).toBe(1);
  // The repair ends the run failed naming the wait, and the wait goes: a signal to its key is buffered for the next waiter.
  expect((await repair("waiter")).action).toBe("ended_failed");
  expect((await runtime.wait("waiter")).termination).toMatchObject({
    status: "failed",
    finalStep: 1,
    error: expect.stringMatching(/^repaired by an operator: its signal wait was damaged \(the wait for signal "wk-bad": /),
  });
  expect(await queue.kvGet(signalWaitKey(Q, "wk-bad"))).toBeNull();
  expect((await cli("signal", "wk-bad", "--json", "{}")).code).toBe(EXIT.ok);
  const again = await cli("runs repair", "waiter");
  expect(again.code).toBe(EXIT.refused);

  // Group members: the listing names both groups; an active member ends failed, an ended member keeps its end.
  const groups = JSON.parse((await cli("groups list", "--json")).out) as { unreadable: { groupId: string; reason: string }[] };
  expect(groups.unreadable.map((u) => u.groupId).sort()).toEqual(["done", "live"]);
  for (const u of groups.unreadable) expect(u.reason).toMatch(/taquba runs repair "g_/);
  const live = await repair(liveA);
  expect(live).toMatchObject({ action: "ended_failed", damaged: [{ record: "group_member", detail: expect.stringMatching(/^member "a": .*unknown state/) }] });
  expect((await runtime.wait(liveA)).termination.error).toMatch(/its group member record was damaged/);
  expect(await runtime.group("live").status()).toMatchObject({ failed: 1, pending: 1 });
  const done = await repair(doneA);
  expect(done).toMatchObject({ action: "records_rewritten", damaged: [{ record: "group_member" }] });
  expect((await runtime.outcome(doneA))?.status).toBe("succeeded");
  expect(await runtime.group("done").status()).toMatchObject({ succeeded: 2, failed: 0 });
  const groupsAfter = JSON.parse((await cli("groups list", "--json")).out) as { unreadable?: unknown[] };
  expect(groupsAfter.unreadable ?? []).toEqual([]);

  // A child whose entry under its parent is damaged: it ends failed, and its parent joins that end.
  const child = children.get("p-child")!;
  const asChild = await repair(child);
  expect(asChild).toMatchObject({
    action: "ended_failed",
    damaged: [{ record: "child_entry", detail: expect.stringMatching(/^its entry under parent run "p-child": /) }],
  });
  const joined = await runtime.wait("p-child");
  expect(joined.termination.status).toBe("succeeded");
  expect(dec.decode(joined.outcome!.result)).toMatch(/^failed:repaired by an operator: its child run entry was damaged/);
  expect(await queue.kvGet(childEntryKey(Q, "p-child", child))).toBeNull();

  // An active parent with a damaged child entry: it ends failed, and its end's settlement cancels the child (its policy).
  const pa = await repair("p-active");
  expect(pa).toMatchObject({
    action: "ended_failed",
    damaged: [{ record: "child_entry", detail: expect.stringContaining(`child run "${children.get("p-active")}"`) }],
  });
  expect((await runtime.wait("p-active")).termination.status).toBe("failed");
  expect((await runtime.wait(children.get("p-active")!)).termination.status).toBe("cancelled");

  // A parent cancelled while its child's entry is damaged: its settlement of its children stops at the entry, leaving the child
  // running; the repair keeps the parent's end and settles the child as that settlement would have.
  for (const id of ["p-ended", "p-abandon"]) expect((await cli("runs cancel", id)).code).toBe(EXIT.ok);
  for (const id of ["p-ended", "p-abandon"]) expect((await runtime.wait(id)).termination.status).toBe("cancelled");
  const state = async (id: string) => (await runtime.status(id))?.state;
  expect(await state(children.get("p-ended")!)).toBe("pending");
  const dryEnded = await repair("p-ended", "--dry-run");
  expect(dryEnded).toMatchObject({ action: "records_rewritten", childrenCancelled: [children.get("p-ended")], dryRun: true });
  expect(await state(children.get("p-ended")!)).toBe("pending");
  const text = await cli("runs repair", "p-ended");
  expect(text.code, text.err).toBe(EXIT.ok);
  expect(text.out).toMatch(/keeps its end; its damaged records were rewritten from it; its children \S+, whose entries were damaged, are cancelled/);
  expect((await runtime.wait(children.get("p-ended")!)).termination.status).toBe("cancelled");
  expect((await runtime.outcome("p-ended"))?.status).toBe("cancelled");
  // Its policy was abandon: the entry goes, the child runs on.
  const ab = await repair("p-abandon");
  expect(ab.childrenCancelled).toBeUndefined();
  expect(await queue.kvGet(childEntryKey(Q, "p-abandon", children.get("p-abandon")!))).toBeNull();
  expect(await state(children.get("p-abandon")!)).toBe("pending");
  for (const id of ["p-ended", "p-abandon", liveA, doneA, child]) expect((await cli("runs repair", id)).code, id).toBe(EXIT.refused);

  // The healthy waiter was not touched.
  expect(await step("waiter-ok")).toBe(1);
  expect((await cli("signal", "wk-ok", "--json", "{}")).code).toBe(EXIT.ok);
  expect((await runtime.wait("waiter-ok")).termination.status).toBe("succeeded");
}

describe("taquba runs repair of the records beside a run's own", () => {
  scenarioOnBothStores(tempDir, "beside", scenario, SCENARIO_MS);
});
