/**
 * @module Generated schedule definitions: upserted through a job runner,
 * ticking the typed job with the spec's input and headers; a definition
 * whose input no longer fits its job is refused before anything is written.
 */
import { describe, expect, it } from "vitest";
import { JobRunner, MemoryStore, MockClock, Queue, ValidationError, defineSchedule, scheduleSpecOf, upsertSchedules } from "taquba";
import { reports } from "../../examples/nightly-report/generated/index.js";
import { until } from "../workflow/helpers.js";

describe("typed schedules", () => {
  it("ticks the typed job with the spec's input and headers", async () => {
    const clock = new MockClock(Date.parse("2026-06-01T12:00:00Z"));
    const store = new MemoryStore();
    const queue = await Queue.open(store, "r", { clock, flushIntervalMs: 1 });
    const seen: string[] = [];
    const runner = reports
      .register(JobRunner.builder(queue, store), {
        salesReport: {
          async run(input, ctx) {
            seen.push(`${ctx.headers.tenant_id}:${input.region}:${input.format}:${ctx.jobId}`);
            return { object_key: "k" };
          },
        },
      })
      .build();
    const worker = runner.spawn();
    const [info] = await upsertSchedules(runner, reports.schedules);
    expect(info).toMatchObject({
      id: "nightly-sales-eu",
      timezone: "Europe/Berlin",
      overlap: "allow",
      catchUp: { allWithinMs: 259_200_000 },
      jitterMs: 60_000,
    });
    const tick = Date.parse("2026-06-02T00:30:00Z");
    expect(info!.nextTickMs).toBe(tick);
    clock.set(tick + 60_000);
    await until(() => seen.length === 1, "the tick's job ran");
    expect(seen).toEqual([`acme:eu:pdf:sched-nightly-sales-eu-${tick}`]);
    await worker.shutdown();
    await queue.close();
  });

  it("refuses a definition whose input or headers its target rejects", () => {
    const bad = defineSchedule({ ...reports.nightlySalesEuSchedule, target: reports.salesReportJob, input: { region: "mars", format: "pdf" } as never });
    expect(() => scheduleSpecOf(bad)).toThrow(ValidationError);
    const noTenant = defineSchedule({ ...reports.nightlySalesEuSchedule, target: reports.salesReportJob, input: { region: "eu", format: "pdf" }, headers: {} });
    expect(() => scheduleSpecOf(noTenant)).toThrow(/tenant_id/);
    expect(() => scheduleSpecOf({ kind: "job" } as never)).toThrow(ValidationError);
  });
});
