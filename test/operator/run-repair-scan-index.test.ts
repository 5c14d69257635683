/**
 * @module `taquba runs repair --scan-index`: a run whose run record and
 * end record hold no submission time (records of earlier versions) has a
 * listing entry no record places. Without the flag its repair is refused
 * saying the entry was not checked and how to check it, and writes
 * nothing; with it the entry is found through the run listing, checked,
 * and rewritten where damaged, at its own key. Over a directory store,
 * through a live owner's inbox.
 */
import { pack, unpack } from "msgpackr";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, NoopTerminalHook, Queue, serveClients, StepOutcome, WorkflowRuntime } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { runIndexPrefix } from "../../runtime/workflow/runs/run-index.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-run-repair-scan-");
const Q = "workflow-steps";
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(120_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

describe("taquba runs repair --scan-index", () => {
  it(
    "finds a listing entry no record places, only when asked",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const queue = await Queue.open(store, "app", { flushIntervalMs: 0, logger: { error: () => {} } });
      const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook)
        .logger({ error: () => {} })
        .build();
      const worker = runtime.spawn();
      for (let i = 0; i < 30; i++) await runtime.submit({ runId: `other-${i}`, input: enc.encode("x") });
      for (const id of ["old-bad", "old-ok"]) await runtime.submit({ runId: id, input: enc.encode("x") });
      for (const id of ["old-bad", "old-ok"]) await runtime.wait(id);
      await worker.shutdown();
      const inbox = serveClients(queue, runtime, { store, listIntervalMs: 50 });
      stops.push(async () => {
        await inbox.stop();
        await queue.close();
      });
      // End records as an earlier version wrote them: no submission time.
      for (const id of ["old-bad", "old-ok"]) {
        const key = terminalRecordKey(Q, id);
        const { submittedAtMs: _, ...rest } = unpack((await queue.kvGet(key))!) as Record<string, unknown>;
        await queue.kvPut(key, new Uint8Array(pack(rest)));
      }
      const entries = (await queue.kvScan(runIndexPrefix(Q), { limit: 100 })).entries;
      const entry = entries.find((e) => e.key.endsWith("old-bad"))!;
      await queue.kvPut(entry.key, new Uint8Array(pack({ ...(unpack(entry.value) as Record<string, unknown>), headers: 5 })));
      const damagedBytes = await queue.kvGet(entry.key);

      const url = pathToFileURL(dir).href;
      const cli = async (...words: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main(["runs", "repair", url, ...words, "--name", "app", "--timeout", "60000"], {
          out: (t) => out.push(t),
          err: (t) => err.push(t),
          color: false,
        });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };

      // Without the flag: refused, saying the entry was not checked and how to check it; nothing written.
      const refused = await cli("old-bad");
      expect(refused.code, refused.err).toBe(EXIT.refused);
      expect(refused.err).toMatch(/run "old-bad" was not repaired: .*listing entry, so that entry was not checked; repair it with --scan-index/);
      expect(await queue.kvGet(entry.key)).toEqual(damagedBytes);

      // With it: the dry run finds the entry and writes nothing; the repair rewrites it at its own key.
      const dry = await cli("old-bad", "--scan-index", "--dry-run", "--json");
      expect(dry.code, dry.err).toBe(EXIT.ok);
      expect(JSON.parse(dry.out)).toMatchObject({ action: "index_rewritten", dryRun: true, damaged: [{ record: "index_entry" }] });
      expect(await queue.kvGet(entry.key)).toEqual(damagedBytes);
      const fixed = await cli("old-bad", "--scan-index");
      expect(fixed.code, fixed.err).toBe(EXIT.ok);
      expect((await runtime.listRuns({ limit: 100 })).unreadable ?? []).toEqual([]);
      expect((await queue.kvScan(runIndexPrefix(Q), { limit: 100 })).entries.map((e) => e.key)).toEqual(entries.map((e) => e.key));
      expect((await runtime.outcome("old-bad"))?.status).toBe("succeeded");

      // A healthy run: refused as not checked without the flag, as not damaged with it.
      expect((await cli("old-ok")).err).toMatch(/was not repaired: .*--scan-index/);
      const ok = await cli("old-ok", "--scan-index");
      expect(ok.code).toBe(EXIT.refused);
      expect(ok.err).toMatch(/run "old-ok" is not damaged/);
    },
    SCENARIO_MS,
  );
});
