/**
 * @module Debounce of typed jobs (a spec's `debounce`, compiled into the
 * definition's `flowControl`) and of runs submitted through a
 * `TaqubaClient`: the last submission of a key within the window runs, the
 * others end superseded, and every API says by which run.
 */
import { describe, expect, it } from "vitest";
import { defineJob, JobCancelledError, JobRunner, LocalStore, MemoryStore, MockClock, Queue, TaqubaClient, ValidationError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { openOwner, STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";
import { emailJob, testHeaders, type EmailError, type EmailInput, type EmailOutput, type TestHeaders } from "./fixtures.js";

const PERIOD = 5000;
const tempDir = useTempDirs("taquba-debounce-jobs-");

const debouncedJob = defineJob<"test.email.debounced", EmailInput, EmailOutput, EmailError, TestHeaders>({
  name: "test.email.debounced",
  package: "test",
  input: emailJob.input,
  output: emailJob.output,
  error: emailJob.error!,
  headers: testHeaders,
  contractHash: "test-email-debounced",
  flowControl: { debounce: { periodMs: PERIOD, key: "{tenant_id}/{to}" } },
});

describe("debounced typed jobs", () => {
  it("runs the last input of a key's window; the earlier handles say which job replaced them", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const store = new MemoryStore();
    const queue = await Queue.open(store, "jobs", { flushIntervalMs: 0, clock });
    const sent: string[] = [];
    const runner = JobRunner.builder(queue, store)
      .register(debouncedJob, {
        run: async (input) => {
          sent.push(input.subject ?? "");
          return { message_id: input.subject ?? "" };
        },
      })
      .build();
    expect(debouncedJob.flowControl?.runOptionsOf({ to: "a@b.c" }, { tenant_id: "acme" })).toEqual({
      debounce: { key: "test.email.debounced:acme/a%40b.c", periodMs: PERIOD },
    });
    const worker = runner.spawn();
    const submit = (subject: string, to = "a@b.c") => runner.submit(debouncedJob, { to, subject }, { headers: { tenant_id: "acme" } });
    const first = await submit("v1");
    clock.advance(1000);
    const second = await submit("v2");
    const other = await submit("other", "x@y.z");
    clock.advance(1000);
    const last = await submit("v3");
    const err = await first.output().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobCancelledError);
    expect(err).toMatchObject({ code: "JOB_CANCELLED", supersededBy: second.jobId });
    expect(await second.result()).toEqual({ status: "cancelled", supersededBy: last.jobId });
    expect((await runner.runtime.status(second.jobId))?.state).toBe("terminated");
    // The window ends a period after its first submission.
    clock.advance(PERIOD);
    expect(await last.output()).toEqual({ message_id: "v3" });
    expect(await other.output()).toEqual({ message_id: "other" });
    expect(sent.sort()).toEqual(["other", "v3"]);
    // A group's members would replace each other: refused before anything is written.
    await expect(runner.group("g", debouncedJob).submit([{ to: "a@b.c" }], { headers: { tenant_id: "acme" } })).rejects.toThrow(/debounced/);
    // A key too long to store is refused at submit.
    await expect(submit("long", `${"x".repeat(600)}@b.c`)).rejects.toBeInstanceOf(ValidationError);
    await worker.shutdown();
    await runner.close();
  });

  it("supersedes runs submitted through a TaqubaClient, and the client's wait, status and listing say by which run", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    try {
      // A long window on the real clock: neither run starts during the test.
      const debounce = { key: "digest:acme", periodMs: 3_600_000 };
      await client.submit({ runId: "d1", input: enc({ n: 1 }), options: { debounce } });
      await client.submit({ runId: "d2", input: enc({ n: 2 }), options: { debounce } });
      const end = await client.wait("d1");
      expect(end.termination).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: "d2" });
      expect(await client.status("d1")).toMatchObject({ state: "terminated", supersededBy: "d2" });
      const rows = (await client.listRuns()).runs;
      expect(rows.find((r) => r.runId === "d1")).toMatchObject({ state: "cancelled", errorKind: "superseded", supersededBy: "d2" });
      expect(rows.find((r) => r.runId === "d2")).toMatchObject({ state: "scheduled", heldBy: { reason: "debounced", key: "digest:acme" } });
      expect((await client.inspectRun("d1"))?.end).toMatchObject({ errorKind: "superseded", supersededBy: "d2" });
      // The client checks the option before it writes a request.
      await expect(client.submit({ runId: "d3", input: enc({}), options: { debounce: { key: "k", periodMs: 0 } } })).rejects.toBeInstanceOf(ValidationError);
    } finally {
      await client.close();
      await owner.stop();
    }
  });
});
