/**
 * Smoke test of every example: each runs as its own child process, as a
 * user would run it, and must exit 0 within its time limit and print the
 * lines that show it did what its header says (run-example.ts). Here the
 * first steps and the durable ones; the others in examples-jobs.test.ts and
 * examples-typed.test.ts, so vitest runs them side by side.
 */
import { describe, expect, it } from "vitest";
import { EXAMPLE_TEST_MS, example, lines } from "./run-example.js";

describe("examples", { timeout: EXAMPLE_TEST_MS }, () => {
  it("demo: killed mid-step, resumed without repeating a side effect, approved and cancelled", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("demo");
    expect(out).toMatch(/\[demo\] +killed worker process 1 \(pid \d+\) with SIGKILL/);
    expect(out).toMatch(/\[process 2\] opened the queue: 1 step the killed process held is claimable again/);
    expect(
      lines(out, /\[process 2\] order-100[12] resubmitted: already in flight .* resumes at step 2 documents, skipping committed steps reserve, charge/),
    ).toHaveLength(2);
    // Rendered before the kill, reused after it; the third document rendered once, in process 2.
    expect(out).toMatch(/\[process 2\] order-1001 step 2 documents: reused memo entry "document:invoice"/);
    expect(out).toMatch(/\[process 2\] order-1001 step 2 documents: reused memo entry "document:packing-slip"/);
    expect(lines(out, /order-1001 step 2 documents: rendered shipping-label/)).toEqual([expect.stringMatching(/^\[process 2\]/)]);
    expect(lines(out, /\[process 2\].* step [01] /)).toEqual([]);
    expect(out).toMatch(/ops approved order-1001: signal (delivered|buffered)/);
    expect(out).toMatch(/customer cancelled order-1002 while it awaited approval: cancelled/);
    expect(out).toMatch(/read back from the directory: order-1001 succeeded at step 3 \(charge ch-\w+, tracking TRK\w+\)/);
    expect(out).toMatch(/read back from the directory: order-1002 cancelled at step 3/);
    expect(out).toMatch(/order-1001: side effects performed: charge x1, documents x3, shipment x1/);
    expect(out).toMatch(/order-1002: side effects performed: charge x1, documents x3, shipment x0/);
    expect(out).toMatch(/^demo finished in [\d.]+ s: 1 process killed with SIGKILL/m);
  });

  it("quickstart: one run echoes its input", async () => {
    const out = await example("quickstart");
    expect(out).toMatch(/^submitted run \w{26}$/m);
    expect(out).toMatch(/succeeded at step 0 with result "hello"/);
  });

  it("single-step: verdicts reach the terminal hook with the submitter's headers", async () => {
    const out = await example("single-step");
    expect(out).toMatch(/hook: run shout-alice \(alice\) succeeded at step 0, result "HELLO"/);
    expect(out).toMatch(/hook: run shout-bob \(bob\) succeeded at step 0, result "TAQUBA"/);
    expect(out).toMatch(/hook: run shout-carol \(carol\) failed at step 0, error "nothing to shout"/);
    expect(out).toMatch(/single-step done: 3 terminations observed by the hook/);
  });

  it("multi-step: a counter loop continues until it succeeds", async () => {
    const out = await example("multi-step");
    expect(lines(out, /^run count-to-5 step \d: count \d -> \d$/)).toHaveLength(5);
    expect(out).toMatch(/run count-to-5 succeeded after 5 steps with count 5/);
  });

  it("crash-resume: committed steps are skipped and the interrupted step reuses its memo", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("crash-resume");
    expect(out).toMatch(/killed process 1 with SIGKILL during step 1/);
    expect(out).toMatch(/\[process 2\] step 0 fetch: skipped, committed before the crash/);
    expect(out).toMatch(/\[process 2\] step 1 transform: chunk 1\/3 reused from memo/);
    expect(lines(out, /\[process 2\] step 0 fetch: chunk/)).toEqual([]);
    expect(out).toMatch(/\[process 2\] run nightly-report succeeded with result f1f2f3\|t1t2t3\|p1p2p3\|/);
  });

  it("durable-approvals: signal, buffered and timeout paths across a restart", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("durable-approvals");
    expect(out).toMatch(/\[process 1\] decision for "upgrade-db" \(not proposed yet\): buffered/);
    expect(lines(out, /\[process 1\] .*: pending at step 1/)).toHaveLength(3);
    expect(out).toMatch(/\[process 2\] approve refund-42: delivered/);
    expect(out).toMatch(/\[process 2\] refund-42: succeeded/);
    expect(out).toMatch(/\[process 2\] delete-tenant-7: failed \(rejected by cto@example.com: tenant has an open contract\)/);
    expect(out).toMatch(/\[process 2\] upgrade-db: succeeded/);
    expect(out).toMatch(/\[process 2\] rotate-keys: failed \(no decision before the timeout/);
    expect(out).toMatch(/decision for "old-request": buffered; withdrawn: true/);
  });

  it("remote-reply: runs continue on replies another process wrote to the bucket", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("remote-reply");
    expect(lines(out, /^\[remote\] +wrote reply app\/replies\/summary-\d\.json/)).toHaveLength(3);
    expect(lines(out, /watcher: reply for reply:summary-\d appeared; signal (delivered|buffered)/)).toHaveLength(3);
    expect(out).toMatch(/summary-2 succeeded: "DURABLE EXECUTION ON OBJECT STORAGE"/);
    expect(out).toMatch(/remote-reply done: 3 runs/);
  });

  it("kv-effects: the status row follows the run, never a failed attempt", async () => {
    const out = await example("kv-effects");
    expect(out).toMatch(/duplicate submission of o-1: newlySubmitted=false/);
    expect(out).toMatch(/o-1 step 1 attempt 2: committed status row says "reserved"/);
    expect(out).not.toMatch(/says "charging"/);
    expect(out).toMatch(/o-1 run succeeded; status row app\/orders\/o-1 = \{"status":"shipped"/);
    expect(out).toMatch(/o-2 run failed; status row app\/orders\/o-2 = \{"status":"rejected"/);
  });
});
