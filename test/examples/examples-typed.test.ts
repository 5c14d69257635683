/**
 * Smoke test of the examples of mock clocks, typed workflows, traces,
 * schedules, fair queues and child runs, and the examples' generated code
 * (see examples.test.ts).
 */
import { describe, expect, it } from "vitest";
import { EXAMPLE_TEST_MS, example, lines, run } from "./run-example.js";

describe("examples", { timeout: EXAMPLE_TEST_MS }, () => {
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
