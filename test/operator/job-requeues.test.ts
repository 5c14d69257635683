/**
 * @module A job's count of requeues from the dead letters as operators see
 * it: in the read-only view's job, in `taquba queue jobs` and `taquba dead
 * list` (table and `--json`), in the dashboard's dead letters, and on a
 * run's step job. A job never requeued shows none.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, Queue, QueueReader } from "taquba";
import { EXIT, main } from "../../operator/cli/main.js";
import { renderRun } from "../../operator/cli/render.js";
import { OperatorSession } from "../../operator/cli/session.js";
import { startDashboard } from "../../operator/dashboard/server.js";
import { Operations } from "../../operator/inspect/operations.js";
import type { RunDetail } from "../../operator/inspect/run-detail.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-job-requeues-");
const enc = new TextEncoder();

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

/** A store holding job `bounced` dead after two requeues, and job `fresh` dead and never requeued, on queue "mail". */
async function storeWithRequeuedJob(): Promise<string> {
  const dir = await tempDir();
  // The dead letters are meant: no log line for them.
  const logger = { error: () => undefined, warn: () => undefined };
  const queue = await Queue.open(new LocalStore(dir), "app", { clock: new MockClock(Date.parse("2026-03-02T10:00:00Z")), logger });
  try {
    await queue.enqueue("mail", enc.encode("x"), { jobId: "bounced", maxAttempts: 1 });
    for (let i = 0; i < 3; i++) {
      const job = (await queue.claim("mail"))!;
      await queue.deadLetter(job, `550 bounce ${i + 1}`);
      if (i < 2) expect(await queue.requeueDead("bounced")).toBe(true);
    }
    await queue.enqueue("mail", enc.encode("y"), { jobId: "fresh", maxAttempts: 1 });
    await queue.deadLetter((await queue.claim("mail"))!, "550 once");
  } finally {
    await queue.close();
  }
  return dir;
}

describe("a job's requeues in the operator's views", () => {
  it("the read-only view's job carries the count; a job never requeued has none", async () => {
    const dir = await storeWithRequeuedJob();
    const reader = await QueueReader.open(new LocalStore(dir), "app");
    try {
      expect(await reader.job("bounced")).toMatchObject({ state: "dead", attempt: 1, requeues: 2 });
      const fresh = (await reader.job("fresh"))!;
      expect("requeues" in fresh).toBe(false);
      expect((await reader.deadJobs("mail")).map((j) => [j.id, j.requeues])).toEqual([
        ["bounced", 2],
        ["fresh", undefined],
      ]);
    } finally {
      await reader.close();
    }
  });

  it("taquba queue jobs and dead list show it in the table and in --json", async () => {
    const url = pathToFileURL(await storeWithRequeuedJob()).href;
    for (const argv of [
      ["queue", "jobs", url, "mail", "--state", "dead"],
      ["dead", "list", url],
    ]) {
      const text = capture();
      expect(await main([...argv, "--name", "app"], text.io), text.err.join("")).toBe(EXIT.ok);
      const lines = text.out.join("\n").split("\n");
      expect(lines[0]).toMatch(/ATTEMPTS\s+REQUEUES\s+AT/);
      expect(lines.find((l) => l.startsWith("bounced"))).toMatch(/\s1\/1\s+2\s/);
      expect(lines.find((l) => l.startsWith("fresh"))).toMatch(/\s1\/1\s+0\s/);
      const json = capture();
      expect(await main([...argv, "--name", "app", "--json"], json.io)).toBe(EXIT.ok);
      const page = JSON.parse(json.out.join("")) as { items: { id: string; requeues: number }[] };
      expect(page.items.map((j) => [j.id, j.requeues])).toEqual([
        ["bounced", 2],
        ["fresh", 0],
      ]);
    }
  });

  it("the dashboard's dead letters carry it", async () => {
    const dir = await storeWithRequeuedJob();
    const session = new OperatorSession({ storeUrl: pathToFileURL(dir).href, name: "app", stepQueue: "workflow-steps", store: new LocalStore(dir) });
    const server = await startDashboard({
      ops: new Operations(session),
      refresh: async () => false,
      info: { name: "app", stepQueue: "workflow-steps", store: "dir" },
      port: 0,
    });
    try {
      const res = await fetch(new URL("/api/dead", server.url));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { shards: { items: { id: string; requeues: number }[] }[] };
      expect(body.shards.flatMap((s) => s.items.map((j) => [j.id, j.requeues]))).toEqual([
        ["bounced", 2],
        ["fresh", 0],
      ]);
    } finally {
      await server.close();
    }
  });

  it("a run's step job says how often it was requeued, and nothing when never", () => {
    const detail = (requeues?: number): RunDetail => ({
      runId: "order-7",
      state: "pending",
      runtimeState: "pending",
      step: 2,
      headers: {},
      stepJob: { id: "J1", state: "pending", attempt: 0, maxAttempts: 3, ...(requeues === undefined ? {} : { requeues }), payload: { size: 1 } },
      timeline: [],
    });
    const io = capture().io;
    expect(renderRun(io, detail(3), 0)).toMatch(/step job\s+J1 \(pending, attempt 0 of 3, requeued 3 times\)/);
    expect(renderRun(io, detail(1), 0)).toMatch(/step job\s+J1 \(pending, attempt 0 of 3, requeued once\)/);
    expect(renderRun(io, detail(), 0)).toMatch(/step job\s+J1 \(pending, attempt 0 of 3\)\n/);
  });
});
