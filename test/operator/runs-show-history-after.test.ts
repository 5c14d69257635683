/**
 * @module `taquba runs show --history-after STEP`: a step number, 0
 * included, reads the history entries after it (past the run's last entry:
 * none, and no next page), "00" and " 0" as 0 (they were refused as not
 * "from 1", though 0 is a step and "05" was read as 5); anything else is
 * refused with a message that says what a step number is.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { HISTORY_ENTRIES_PER_PAGE } from "../../runtime/workflow/runs/inspect-run.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

const tempDir = useTempDirs("taquba-runs-show-history-after-");
const STEPS = 120;

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

describe("runs show --history-after", () => {
  it("reads after any step number, 0 and past the end included, and refuses what is none saying what it takes", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const q = await Queue.open(store, "app", { flushIntervalMs: 0 });
    const runtime = WorkflowRuntime.builder(
      q,
      store,
      { runStep: async (s) => (s.stepNumber < STEPS ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload)) },
      NoopTerminalHook,
    ).build();
    const worker = runtime.spawn();
    await runtime.submit({ runId: "r", input: new Uint8Array([1]) });
    await until("the run ended", async () => (await runtime.status("r"))?.state === "terminated", 60_000);
    await worker.shutdown();
    await q.close();

    const show = async (after: string) => {
      const t = capture();
      const code = await main(["runs", "show", pathToFileURL(dir).href, "r", "--name", "app", "--json", `--history-after=${after}`], t.io);
      return { code, out: t.out.join("\n"), err: t.err.join("\n") };
    };
    const page = (out: string) => (JSON.parse(out) as { historyPage?: unknown }).historyPage;
    for (const [after, expected] of [
      ["0", { after: 0, count: HISTORY_ENTRIES_PER_PAGE, next: HISTORY_ENTRIES_PER_PAGE }],
      // Written with leading zeros or a space, as a count may be: still step 0.
      ["00", { after: 0, count: HISTORY_ENTRIES_PER_PAGE, next: HISTORY_ENTRIES_PER_PAGE }],
      [" 0", { after: 0, count: HISTORY_ENTRIES_PER_PAGE, next: HISTORY_ENTRIES_PER_PAGE }],
      [String(HISTORY_ENTRIES_PER_PAGE), { after: HISTORY_ENTRIES_PER_PAGE, count: STEPS - HISTORY_ENTRIES_PER_PAGE }],
      [String(STEPS), { after: STEPS, count: 0 }],
      [String(Number.MAX_SAFE_INTEGER), { after: Number.MAX_SAFE_INTEGER, count: 0 }],
    ] as const) {
      const r = await show(after);
      expect(r.code, `${after}: ${r.err}`).toBe(EXIT.ok);
      expect(page(r.out), after).toEqual(expected);
    }
    for (const bad of ["-1", "1.5", "1e2", "0x10", "abc", "", "9007199254740992"]) {
      const r = await show(bad);
      expect(r.code, JSON.stringify(bad)).toBe(EXIT.usage);
      expect(r.err, JSON.stringify(bad)).toContain(
        `--history-after must be a step number, a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, got ${JSON.stringify(bad)}`,
      );
    }
  }, 120_000);
});
