/**
 * @module What the operator CLI shows of flow control: a debounced job
 * (its window is in its record, so a reader in another process sees it)
 * listed with why it waits and until when.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue } from "../../runtime/index.js";
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
});
