/**
 * @module `taquba schedules list` over a real directory store an owner
 * wrote: a table with next and last ticks, and one JSON document.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-schedules-cli-");

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

describe("taquba schedules list", () => {
  it("lists each schedule with its state and next tick, as a table and as JSON", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const q = await Queue.open(store, "app", { flushIntervalMs: 0 });
    const runtime = WorkflowRuntime.builder(q, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
    await runtime.schedules.upsert({ id: "nightly", cron: "30 2 * * *", timezone: "Europe/Berlin", run: { input: new Uint8Array([1]) } });
    await runtime.schedules.upsert({ id: "hourly", cron: "0 * * * *", run: { input: new Uint8Array([2]) }, catchUp: { allWithinMs: 7_200_000 } });
    await runtime.schedules.pause("hourly");
    await q.close();

    const t = capture();
    expect(await main(["schedules", "list", pathToFileURL(dir).href, "--name", "app"], t.io)).toBe(EXIT.ok);
    const lines = t.out.join("\n").split("\n");
    expect(lines[0]).toMatch(/^SCHEDULE\s+CRON\s+TIMEZONE\s+STATE\s+NEXT TICK\s+LAST TICK\s+LAST RUN\s+OVERLAP\s+CATCH-UP$/);
    expect(lines[1]).toMatch(/^hourly\s+0 \* \* \* \*\s+UTC\s+paused\s+-\s+-\s+-\s+skip\s+within 7200000 ms$/);
    expect(lines[2]).toMatch(/^nightly\s+30 2 \* \* \*\s+Europe\/Berlin\s+active\s+\d{4}-\d\d-\d\dT\d\d:30:00\.000Z\s+-\s+-\s+skip\s+none$/);

    const j = capture();
    expect(await main(["schedules", "list", pathToFileURL(dir).href, "--name", "app", "--json"], j.io)).toBe(EXIT.ok);
    const doc = JSON.parse(j.out.join("\n")) as { schedules: { id: string; paused: boolean; nextTickMs: number | null }[] };
    expect(doc.schedules.map((s) => [s.id, s.paused])).toEqual([
      ["hourly", true],
      ["nightly", false],
    ]);
    expect(doc.schedules[1]!.nextTickMs).toBeGreaterThan(Date.now());

    const other = capture();
    expect(await main(["schedules", "list", pathToFileURL(dir).href, "--name", "app", "--step-queue", "other"], other.io)).toBe(EXIT.ok);
    expect(other.out.join("\n")).toBe('no schedules on step queue "other"');
  });
});
