/**
 * @module The operator CLI's scenario, shared by its two files (a local
 * directory in cli-commands.test.ts, the S3 protocol server in
 * cli-commands-s3.test.ts, so vitest runs them side by side): the
 * `taquba` bin as a child process against a store while the owner runs in
 * another process. Lists runs, shows a failed run's timeline with its
 * errors and stacks, sends a signal, cancels a run, retries a failed run
 * after its cause is fixed, lists dead letters and queue stats; checks exit
 * codes and that refused commands change nothing.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { openStore, TaqubaClient, type ObjectStore, type RunEnd } from "taquba";
import { startScript, type ChildScript } from "../support/child-script.js";
import { scaledForLoad } from "../support/load.js";
import { until } from "../support/until.js";
import { taquba } from "./cli-process.js";
import { OPS_OWNER_FAILURES, STEP_QUEUE, STORE_NAME } from "./fixtures/ops-app.js";
import { expectNoUnexpectedFailures } from "../support/background-errors.js";

const OWNER = fileURLToPath(new URL("./fixtures/ops-owner.ts", import.meta.url));
// A guard against a hang, stretched by the load (support/load.ts): a scenario runs the bin 25 times, one
// process after another, each about 0.7 s of CPU and 7 to 10 s of wall time at load 19-23 on two cores; the
// scenario took 254 s (local directory) and 285 s (S3) there, and its wall time grows with the load.
export const SCENARIO_TEST_MS = scaledForLoad(200_000);
const enc = new TextEncoder();

/** Runs the whole scenario against the store at `url`; `work` holds the file that fixes the failing runs. */
export async function cliScenario(url: string, env: NodeJS.ProcessEnv, work: string, store: ObjectStore = openStore(url, { env })): Promise<void> {
  const owner: ChildScript = startScript(OWNER, [url], { env });
  const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, pollIntervalMs: 200 });
  // `words`: the command ("runs list"); the store URL follows it, then the operands and options.
  const cli = (words: string, ...rest: string[]) => taquba([...words.split(" "), url, ...rest, "--name", STORE_NAME, "--step-queue", STEP_QUEUE], env);
  try {
    await owner.waitFor((l) => l.includes("ready"));
    const fix = join(work, "fixed");
    await client.submit({ runId: "order-ok", input: enc.encode(JSON.stringify({ hello: "world" })), options: { headers: { tenant: "acme" } } });
    await client.submit({
      runId: "order-fail",
      input: enc.encode(JSON.stringify({ fail: "card <script>declined</script>", fixedBy: fix })),
      options: { maxAttemptsPerStep: 2 },
    });
    await client.submit({ runId: "order-wait", input: enc.encode(JSON.stringify({ wait: "approve-7" })) });
    await client.submit({ runId: "order-cancel", input: enc.encode(JSON.stringify({ wait: "never" })) });
    await client.submit({ runId: "order-dead", input: enc.encode(JSON.stringify({ permanent: "no such warehouse", fixedBy: fix })) });
    const failed: RunEnd = await client.wait("order-fail");
    expect(failed.termination.status).toBe("failed");
    await client.wait("order-ok");
    expect((await client.wait("order-dead")).termination).toMatchObject({ status: "failed", errorKind: "permanent" });

    // runs list: every run, newest first; filtered by state.
    const all = await cli("runs list", "--json");
    expect(all.code, all.stderr).toBe(0);
    const page = JSON.parse(all.stdout) as { runs: { runId: string; state: string }[] };
    expect(
      page.runs
        .map((r) => r.runId)
        .filter((id) => id.startsWith("order-"))
        .sort(),
    ).toEqual(["order-cancel", "order-dead", "order-fail", "order-ok", "order-wait"]);
    const failedOnly = await cli("runs list", "--state", "failed");
    expect(failedOnly.code, failedOnly.stderr).toBe(0);
    expect(failedOnly.stdout).toMatch(/^RUN\s+WORKFLOW\s+STATE/);
    expect(failedOnly.stdout).toContain("order-fail");
    expect(failedOnly.stdout).not.toContain("order-ok");
    expect((await cli("runs list", "--state", "exploded")).code).toBe(2);

    // runs show: the failed run's attempts, its error text and the stack of the thrown error.
    const shown = await cli("runs show", "order-fail");
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/state\s+failed/);
    expect(shown.stdout).toContain("card <script>declined</script>");
    expect(shown.stdout).toContain("PaymentDeclinedError");
    expect(shown.stdout).toMatch(/attempt 2/);
    const shownJson = JSON.parse((await cli("runs show", "order-ok", "--json")).stdout) as { state: string; headers: Record<string, string> };
    expect(shownJson).toMatchObject({ state: "succeeded", headers: { tenant: "acme" } });
    const missing = await cli("runs show", "no-such-run");
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('no record of run "no-such-run"');

    // signal: delivered to the waiting step; the run ends with the payload.
    const waitingShown = await cli("runs show", "order-wait");
    expect(waitingShown.stdout).toMatch(/state\s+waiting/);
    expect(waitingShown.stdout).toContain("approve-7");
    const badJson = await cli("signal", "approve-7", "--json", "{not json");
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain("--json is not valid JSON");
    const sent = await cli("signal", "approve-7", "--json", '{ "approved": true }');
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toContain('signal "approve-7" delivered');
    const signalled = await client.wait("order-wait");
    expect(new TextDecoder().decode((await client.outcome("order-wait"))?.result)).toBe('{"approved":true}');
    expect(signalled.termination.status).toBe("succeeded");

    // runs cancel: recorded; a second cancel of the ended run is refused with exit 4.
    const cancelled = await cli("runs cancel", "order-cancel");
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect((await client.wait("order-cancel")).termination.status).toBe("cancelled");
    const again = await cli("runs cancel", "order-cancel");
    expect(again.code).toBe(4);
    expect(again.stderr).toContain("already ended (cancelled)");

    // runs retry: refused for a succeeded run (nothing changes), then the fixed run succeeds.
    const refused = await cli("runs retry", "order-ok");
    expect(refused.code).toBe(4);
    expect((await client.status("order-ok"))?.state).toBe("terminated");
    writeFileSync(fix, "");
    const retried = await cli("runs retry", "order-fail");
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain("order-fail re-opened at step 0");
    const end = await client.wait("order-fail");
    expect(end.termination.status).toBe("succeeded");

    // dead list: the plain queue's dead letter and the dead step job, with their error texts.
    const dead = await cli("dead list");
    expect(dead.code, dead.stderr).toBe(0);
    expect(dead.stdout).toContain("welcome-mail");
    expect(dead.stdout).toContain("550 mailbox <b>unavailable</b>");
    const deadPage = JSON.parse((await cli("dead list", "--json")).stdout) as { items: { id: string; runId?: string; lastError?: string }[] };
    const deadStep = deadPage.items.find((j) => j.runId === "order-dead");
    expect(deadStep?.lastError).toContain("no such warehouse");

    // dead redrive: an unknown job is exit 3; the step job's run is re-opened and succeeds (the plain queue's job is requeued below).
    expect((await cli("dead redrive", "no-such-job")).code).toBe(3);
    const redriven = await cli("dead redrive", deadStep!.id);
    expect(redriven.code, redriven.stderr).toBe(0);
    expect(redriven.stdout).toContain("order-dead re-opened at step 0");
    expect((await client.wait("order-dead")).termination.status).toBe("succeeded");
    const after = JSON.parse((await cli("dead list", "--json")).stdout) as { items: { id: string }[] };
    expect(after.items.map((j) => j.id)).toContain("welcome-mail");
    expect(after.items.map((j) => j.id)).not.toContain(deadStep!.id);
    // A plain queue's dead job is requeued through the owner, with fresh attempts; a second redrive finds it no longer dead (exit 4).
    const plain = await cli("dead redrive", "welcome-mail");
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain("job welcome-mail of queue");
    expect(plain.stdout).toContain("requeued with fresh attempts");
    const afterRequeue = JSON.parse((await cli("dead list", "--json")).stdout) as { items: { id: string }[] };
    expect(afterRequeue.items.map((j) => j.id)).not.toContain("welcome-mail");
    expect((await cli("dead redrive", "welcome-mail")).code).toBe(4);

    // groups show: the group's members by state.
    await until("the group's members ended", async () => JSON.parse((await cli("groups show", "nightly-batch", "--json")).stdout).counts.failed === 1, 120_000);
    const group = await cli("groups show", "nightly-batch");
    expect(group.code, group.stderr).toBe(0);
    expect(group.stdout).toMatch(/members\s+3: 2 succeeded, 1 failed/);
    expect(group.stdout).toContain("row 7 is malformed");
    expect((await cli("groups show", "no-such-group")).code).toBe(3);

    const stats = await cli("queue stats", "--json");
    expect(stats.code, stats.stderr).toBe(0);
    const health = JSON.parse(stats.stdout) as { deadLetters: number; queues: { queue: string }[] };
    expect(health.deadLetters).toBeGreaterThanOrEqual(1);
    expect(health.queues.map((q) => q.queue)).toContain(STEP_QUEUE);
  } finally {
    await client.close();
    await owner.kill();
  }
  expectNoUnexpectedFailures("the owner process", owner, OPS_OWNER_FAILURES);
}
