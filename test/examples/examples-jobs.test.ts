/**
 * Smoke test of the examples of memoized calls, webhooks, jobs, groups and
 * leases (see examples.test.ts).
 */
import { describe, expect, it } from "vitest";
import { EXAMPLE_TEST_MS, example, lines } from "./run-example.js";

describe("examples", { timeout: EXAMPLE_TEST_MS }, () => {
  it("llm-agent: every model call memoized, the retry reuses the outline", async () => {
    const out = await example("llm-agent");
    expect(out).toMatch(/draft call failed \(429 rate limited/);
    expect(out).toMatch(/step 1 write \(attempt 2\)\n {2}memo hit \(outline\)/);
    expect(lines(out, /model call \d \(/)).toHaveLength(5);
    expect(out).toMatch(/run article-1 succeeded: "Durable agents: /);
  });

  it("webhooks: signed terminations verified by a loopback receiver", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("webhooks");
    expect(out).toMatch(/receiver: verified delivery \w+: run invoice-7 succeeded, body "invoice for EUR 120 sent"/);
    expect(out).toMatch(/receiver: verified delivery \w+: run invoice-8 failed, notice RUN_FAILED: "invalid amount 0"/);
    expect(out).toMatch(/receiver: refused a request: no-matching-signature/);
    expect(out).toMatch(/forged request answered 401/);
    expect(out).not.toMatch(/run invoice-9 .*body/);
  });

  it("fanout-jobs: a typed workflow step on the jobs' runtime; a retried fan-out collapses onto existing jobs by idempotency key", {
    timeout: EXAMPLE_TEST_MS,
  }, async () => {
    const out = await example("fanout-jobs");
    expect(out).toMatch(/fan_out attempt 1: connection lost after submitting 3 jobs/);
    expect(out).toMatch(/fan_out attempt 2: 6 submissions, 3 new, 3 matched existing jobs by idempotency key/);
    expect(out).toMatch(/fan_out attempt 2: joined 6 thumbnails \(177600 bytes\), memoized/);
    expect(lines(out, /^ {2}job: resized /)).toHaveLength(6);
    expect(out).toMatch(/publish: published album summer with 6 thumbnails/);
    expect(out).toMatch(/run album-summer succeeded: thumbs\/320\/beach.jpg, /);
    expect(out).toMatch(/fanout-jobs done: 6 resize jobs ran for 6 thumbnails/);
    expect(out).toMatch(/rejected before enqueueing: invalid thumbs.photo.resize input/);
  });

  it("group-document-pipeline: progress and cost folded over the group's results", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("group-document-pipeline");
    expect(out).toMatch(/submitted group intake-2026-11-29: 20 documents/);
    expect(lines(out, /^progress \d+\/20: /)).toHaveLength(4);
    expect(out).toMatch(/doc-007: attempt 2 reuses the extract stage from the memo/);
    expect(out).toMatch(/doc:doc-013: failed \(empty\)/);
    expect(out).toMatch(/"total":20,"unsubmitted":0,"pending":0,"running":0,"succeeded":19,"failed":1,"cancelled":0/);
    expect(out).toMatch(/group-document-pipeline done: 20 documents, 1 failed, total cost \$0\.024350/);
  });

  it("hello-jobs: generated typed jobs, idempotent duplicates, typed failure, results after a restart", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("hello-jobs");
    expect(lines(out, /^email job j_\w+: sent msg-acme-/)).toHaveLength(3);
    expect(out).toMatch(/invoice job: invoices\/inv-2026-001.pdf, total 172.5 EUR/);
    expect(out).toMatch(/duplicate email: newlySubmitted=false, same job true, 3 emails sent in all/);
    expect(out).toMatch(/failed with typed error \{"reason":"bounced"\}/);
    expect(out).toMatch(/rejected before enqueueing: .*tenant_id/);
    expect(out).toMatch(/after a restart, job j_\w+: \{"status":"succeeded","output":\{"message_id":"msg-acme-grace"\}\}/);
  });

  it("queue-worker: priorities, delay, dedup, retries and a dead letter, with KV rows", async () => {
    const out = await example("queue-worker");
    expect(out).toMatch(/dedup: second enqueue returned job the same job, newlyEnqueued=false/);
    expect(out).toMatch(/stats before the worker: \{"pending":4,"scheduled":1,/);
    expect(lines(out, /^attempt \d: /)[0]).toBe("attempt 1: sent receipt to b@example.com");
    expect(out).toMatch(/attempt 3: sent receipt to flaky@example.com/);
    expect(out).toMatch(/stats after: \{"pending":0,"scheduled":0,"claimed":0,"done":4,"dead":1\}/);
    expect(out).toMatch(/dead job \w+: no mail server for nobody@invalid/);
    expect(out).toMatch(/outbox rows: a@example.com=sent, b@example.com=sent, c@example.com=sent, flaky@example.com=sent, nobody@invalid=undeliverable/);
  });

  it("long-running: the lease is extended and a running step stops on cancellation", async () => {
    const out = await example("long-running");
    expect(out).toMatch(/step 0: started; lease expires in (29|30) s\nstep 0: lease extended; expires in (64|65) s/);
    expect(out).toMatch(/cancel reindex-catalog: true; status now (cancelling|terminated)/);
    // The cancel lands in the third chunk's 100 ms call or, on a busy machine, a later chunk's: the step stops there, short of its 20.
    const stopped = /cancellation requested during chunk (\d+); stopping after (\d+) of 20 chunks/.exec(out);
    expect(stopped, out).not.toBeNull();
    const during = Number(stopped![1]);
    expect(during).toBeGreaterThanOrEqual(3);
    expect(Number(stopped![2])).toBe(during - 1);
    expect(out).toContain(`run reindex-catalog cancelled ("stopped on request") after ${during - 1} of 20 chunks`);
  });
});
