/**
 * @module What the operator CLI shows of flow control: a debounced job
 * (its window is in its record, so a reader in another process sees it)
 * listed with why it waits and until when; a run a debounce superseded
 * shown with the run that replaced it.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-flow-cli-");

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

describe("flow control in the operator CLI", () => {
  it("lists a debounced job as held, with its key and the window's end, as a table and as JSON", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const q = await Queue.open(store, "app", { flushIntervalMs: 0 });
    const { jobId } = await q.enqueue("emails", new Uint8Array([1]), { debounce: { key: "digest:acme", periodMs: 3_600_000 } });
    const until = (await q.view().job(jobId))!.runAt!;
    await q.close();

    const t = capture();
    expect(await main(["queue", "jobs", pathToFileURL(dir).href, "emails", "--state", "scheduled", "--name", "app"], t.io)).toBe(EXIT.ok);
    const text = t.out.join("\n");
    expect(text).toContain(jobId);
    expect(text).toContain(`held: debounced (key "digest:acme"): a later submission with the key replaces it until ${new Date(until).toISOString()}`);

    const j = capture();
    expect(await main(["queue", "jobs", pathToFileURL(dir).href, "emails", "--state", "scheduled", "--name", "app", "--json"], j.io)).toBe(EXIT.ok);
    const doc = JSON.parse(j.out.join("\n")) as { items: { id: string; waiting?: unknown }[] };
    expect(doc.items).toEqual([expect.objectContaining({ id: jobId, waiting: { reason: "debounced", key: "digest:acme", until } })]);
  });

  it("shows a superseded run with the run that replaced it, and the replacement as held by its window", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const q = await Queue.open(store, "app", { flushIntervalMs: 0 });
    const runtime = WorkflowRuntime.builder(q, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
    const debounce = { key: "digest:acme", periodMs: 3_600_000 };
    await runtime.submit({ runId: "d1", input: new Uint8Array([1]), options: { debounce } });
    await runtime.submit({ runId: "d2", input: new Uint8Array([2]), options: { debounce } });
    await q.close();

    const cli = async (...args: string[]) => {
      const t = capture();
      expect(await main([...args.slice(0, 2), pathToFileURL(dir).href, ...args.slice(2), "--name", "app"], t.io)).toBe(EXIT.ok);
      return t.out.join("\n");
    };
    const shown = await cli("runs", "show", "d1");
    expect(shown).toMatch(/superseded by\s+d2/);
    expect(shown).toContain("[superseded]");
    expect(await cli("runs", "show", "d2")).toMatch(/held by\s+debounced \(key "digest:acme"\)/);
    const doc = JSON.parse(await cli("runs", "show", "d1", "--json")) as { supersededBy?: string; errorKind?: string };
    expect(doc).toMatchObject({ supersededBy: "d2", errorKind: "superseded" });
  });
});
