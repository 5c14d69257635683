/**
 * Smoke test of every example: each runs as its own child process, as a
 * user would run it, and must exit 0 within its time limit and print the
 * lines that show it did what its header says.
 */
import { spawnTied } from "../support/tied-children.js";
import { scaledForLoad } from "../support/load.js";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], timeoutMs: number): Promise<Ran> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a timeout also ends the worker processes an example started.
    const child = spawnTied(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += String(d)));
    child.stderr!.on("data", (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      reject(new Error(`${args.join(" ")} did not finish within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// A guard against a hang, not a speed check: each example spawns processes that
// load TypeScript through tsx, which takes tens of seconds on a loaded machine.
const EXAMPLE_LIMIT_MS = scaledForLoad(90_000);
const EXAMPLE_TEST_MS = EXAMPLE_LIMIT_MS + 10_000;

async function example(name: string, timeoutMs = EXAMPLE_LIMIT_MS): Promise<string> {
  const r = await run(["--import", "tsx", `examples/${name}.ts`], timeoutMs);
  expect(r.code, `examples/${name}.ts exited with ${r.code ?? r.signal}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
  return r.stdout;
}

/** The lines of `out` matching `re`. */
const lines = (out: string, re: RegExp) => out.split("\n").filter((l) => re.test(l));

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

  it("time-injection: a mock clock drives delays and memo retention", async () => {
    const out = await example("time-injection");
    expect(out).toMatch(/day 0\.0: step 0 sent email-0-to-ada@example.com/);
    expect(out).toMatch(/day 3\.0: one millisecond early, 1 step run so far/);
    expect(out).toMatch(/day 3\.0: step 1 sent email-1-to-ada@example.com/);
    expect(out).toMatch(/day 3\.0: run succeeded; outcome kept: true/);
    expect(out).toMatch(/day 5\.0: retention window over: outcome kept: false, status null/);
  });

  it("order-fulfilment: the typed order.fulfil workflow across a restart, each run's typed end", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("order-fulfilment/main");
    expect(out).toMatch(/submitted 5 orders; restarting while they wait for payments/);
    expect(out).toMatch(/o-100: courier API unavailable on attempt 1; retrying/);
    expect(out).toMatch(/^o-100: succeeded, tracking TRK-parcel-res-o-100, paid 2500 cents$/m);
    expect(out).toMatch(/^o-101: failed, underpaid \(paid 1000 of 4000 cents\)$/m);
    expect(out).toMatch(/^o-102: failed, payment_timeout/m);
    expect(out).toMatch(/^o-103: failed, out_of_stock \(no stock for SOLD-OUT\)$/m);
    expect(out).toMatch(/^o-104: cancelled$/m);
  });

  it("observability: a run's trace tree under the request span, its counters and its log events", async () => {
    const out = await example("observability");
    expect(out).toMatch(/log warn: {2}workflow run checkout-42 step 0 attempt 1 of 3 failed; retrying \(Error: inventory service timed out\)/);
    expect(lines(out, /^trace: /)).toEqual([
      "trace: POST /checkout (request)",
      "trace:   taquba.submit (run checkout-42)",
      "trace:     taquba.step (step 0 attempt 1 retried) ERROR: inventory service timed out",
      "trace:       taquba.settle (settlement commit: retried)",
      "trace:     taquba.step (step 0 attempt 2 completed)",
      "trace:       taquba.settle (settlement commit: completed)",
      "trace:     taquba.step (step 1 attempt 1 completed)",
      "trace:       taquba.settle (settlement commit: completed)",
      "trace:     taquba.step (step 2 attempt 1 completed)",
      "trace:       taquba.settle (settlement commit: completed)",
    ]);
    expect(out).toMatch(/^metric: taquba\.step\.attempts\{completed\} = 3$/m);
    expect(out).toMatch(/^metric: taquba\.step\.retries = 1$/m);
    expect(out).toMatch(/^metric: taquba\.queue\.jobs\{done\} = 3$/m);
    expect(out).toMatch(/^metric: taquba\.step\.transition\.duration = 2 samples$/m);
    expect(out).toMatch(/^log info: {2}queue "shop": this process is now the writer of its store \(writer epoch 1\)$/m);
  });

  it("nightly-report: one run per tick, the DST night at 03:00, missed nights caught up, trigger and pause", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("nightly-report");
    expect(lines(out, /^tick .* Berlin: report run sched-nightly-sales-eu-\d+$/)).toEqual([
      "tick 2026-03-28 02:30:00 Berlin: report run sched-nightly-sales-eu-1774661400000",
      "tick 2026-03-29 03:00:00 Berlin: report run sched-nightly-sales-eu-1774746000000",
      "tick 2026-03-30 02:30:00 Berlin: report run sched-nightly-sales-eu-1774830600000",
    ]);
    expect(lines(out, /^caught up: report run/)).toEqual([
      "caught up: report run sched-nightly-sales-eu-1774917000000",
      "caught up: report run sched-nightly-sales-eu-1775003400000",
      "caught up: report run sched-nightly-sales-eu-1775089800000",
    ]);
    expect(out).toMatch(/^triggered now: run sched-nightly-sales-eu-now\d+ built its report$/m);
    expect(out).toMatch(/^paused: true, next tick none while paused, a day later still 7 reports$/m);
    expect(out).toMatch(/^nightly-report done: 7 reports built, one run per tick$/m);
  });

  it("tenant-fair-queue: at most two steps per tenant at once, small tenants pass a flooding one", { timeout: EXAMPLE_TEST_MS }, async () => {
    const out = await example("tenant-fair-queue");
    expect(out).toMatch(/^acme: 12 runs, at most 2 at once$/m);
    expect(out).toMatch(/^globex: 3 runs, at most 2 at once$/m);
    expect(out).toMatch(/^initech: 3 runs, at most 2 at once$/m);
    expect(out).toMatch(/^globex and initech were done while acme still had runs to go$/m);
    expect(out).toMatch(/^a build of acme waits: 2 of 2 slots of "tenants\.report\.build" taken$/m);
  });

  it("parent-child: a batch fans out child workflows, a retried fan-out finds them, the join gets typed ends, a cancel reaches the children", {
    timeout: EXAMPLE_TEST_MS,
  }, async () => {
    const out = await example("parent-child");
    expect(out).toMatch(/^batch-1 fan_out attempt 1: 4 children started, 0 found from an earlier attempt$/m);
    expect(out).toMatch(/^batch-1 fan_out attempt 2: 0 children started, 4 found from an earlier attempt$/m);
    expect(lines(out, /^batch-1 join: /)).toEqual([
      "batch-1 join: child batch-1-s0-intro_md rendered intro.md (4 pages)",
      "batch-1 join: child batch-1-s0-chapter-1_md rendered chapter-1.md (3 pages)",
      "batch-1 join: child batch-1-s0-corrupt-scan_pdf failed: corrupt-scan.pdf has no readable pages",
      "batch-1 join: child batch-1-s0-appendix_md rendered appendix.md (2 pages)",
    ]);
    expect(out).toMatch(/^batch-1 succeeded: 9 pages from intro.md, chapter-1.md, appendix.md; failed: corrupt-scan.pdf has no readable pages$/m);
    expect(out).toMatch(/^batch-1 children: 4, each rendered 1 time\(s\)$/m);
    expect(out).toMatch(/^batch-2 cancelled$/m);
    expect(lines(out, /^child batch-2-/)).toEqual(["child batch-2-s0-slow-a_md: cancelled", "child batch-2-s0-slow-b_md: cancelled"]);
  });

  it("the examples' generated code is up to date with their specs", { timeout: 120_000 }, async () => {
    for (const dir of ["demo", "durable-approvals", "fanout-jobs", "group-document-pipeline", "nightly-report", "parent-child", "tenant-fair-queue"]) {
      const r = await run(["codegen/bin.js", "codegen", `examples/${dir}`, "--out", `examples/${dir}/generated`, "--check"], 20_000);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
  });
});
