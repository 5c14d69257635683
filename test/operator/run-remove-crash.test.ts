/**
 * @module `taquba runs repair --remove` (`TaqubaClient.repairRun` with
 * `remove`) across owners killed by SIGKILL at random writes of the
 * removal, over a directory and the S3 protocol server: a damaged parent
 * (its child waiting) and a damaged group member are removed through the
 * owner's inbox while owners in child processes die before their nth
 * write (the repair's commit, the children's settlement, the memo's
 * deletes, the removal's commit). Each next owner applies the request
 * again from what the last left (an ended run, a run partly removed) or
 * answers it from its mark. At the end both runs are gone from every
 * listing and record, the child is cancelled, the group counts the
 * member failed and the other member still waiting, and the other run is
 * untouched.
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { TaqubaClient, type ObjectStore } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { groupTag, memberRunId } from "../../runtime/workflow/groups/group-keys.js";
import { runKey, stepPointerKey } from "../../runtime/workflow/records/kv-keys.js";
import type { RepairOutcome } from "../../runtime/workflow/runs/repair.js";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout, scaledForLoad } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { useS3Server, withS3Environment } from "../support/use-s3-server.js";
import { openRemoveOwner, openSpec, type StoreSpec } from "./fixtures/remove-app.js";
import { damage, keysOf } from "../workflow/run-records.js";

const OWNER = fileURLToPath(new URL("./fixtures/remove-owner.ts", import.meta.url));
const tempDir = useTempDirs("taquba-remove-crash-");
const Q = "workflow-steps";
const enc = new TextEncoder();
/** Owners killed at a random write before one that lives. */
const KILLED_OWNERS = 4;

async function scenario(spec: StoreSpec, url: string): Promise<void> {
  const env = { ...process.env };
  const rnd = testRandom("run-remove-crash");
  const store: ObjectStore = openSpec(spec);
  const children = new Map<string, string>();
  const member = memberRunId(groupTag("g"), "a");
  const other = memberRunId(groupTag("g"), "b");
  {
    const owner = await openRemoveOwner(store, children);
    try {
      await owner.runtime.submit({ runId: "p", input: enc.encode("parent") });
      await owner.runtime.submit({ runId: "bystander", input: enc.encode("wait") });
      await owner.runtime.group("g").submit([
        { key: "a", input: enc.encode("wait") },
        { key: "b", input: enc.encode("wait") },
      ]);
      const step = async (id: string) => (await owner.runtime.status(id))?.step;
      await until(
        "the runs waiting",
        async () =>
          children.has("p") &&
          (await step(children.get("p")!)) === 1 &&
          (await step(member)) === 1 &&
          (await step(other)) === 1 &&
          (await step("bystander")) === 1,
        scaledForLoad(60_000),
      );
      await damage(owner, runKey(Q, "p"), { priority: -1 });
      await damage(owner, stepPointerKey(Q, member), { step: -1 });
    } finally {
      await owner.stop();
    }
  }
  const child = children.get("p")!;

  const client = await TaqubaClient.open(store, { name: "app", queueName: Q, timeoutMs: scaledForLoad(180_000), pollIntervalMs: 200 });
  try {
    const removals = [client.repairRun("p", { remove: true }), client.repairRun(member, { remove: true })];
    const answered = Promise.allSettled(removals);
    let kills = 0;
    for (let i = 0; i < KILLED_OWNERS; i++) {
      // The two removals take at least six log puts (two repair commits, the child's cancel and its entry's removal, two removal
      // commits), so the first owner always dies among them; later ones die wherever the work left reaches their nth write.
      const nth = 1 + rnd.int(6);
      const owner = startScript(OWNER, [JSON.stringify(spec), String(nth)], { env });
      await owner.waitFor((lines) => lines.includes("ready"));
      const first = await Promise.race([owner.exited.then(() => "killed" as const), answered.then(() => "answered" as const)]);
      if (first === "killed") {
        expect(owner.lines, owner.stderr()).toContain(`K ${nth}`);
        kills++;
      } else {
        await owner.kill();
        break;
      }
    }
    const owner = await openRemoveOwner(store);
    try {
      const [p, m] = (await answered).map((r) => {
        if (r.status === "rejected") throw r.reason;
        return r.value;
      }) as [RepairOutcome, RepairOutcome];
      // An owner killed after the removal's first commit (the run ended, its damage mended) leaves the next one a healthy ended run to remove.
      expect(p).toMatchObject({ runId: "p", action: "removed", dryRun: false });
      expect(p.damaged.map((d) => d.record)).toEqual(expect.arrayContaining(p.damaged.length === 0 ? [] : ["run_record"]));
      expect(m).toMatchObject({ runId: member, action: "removed", dryRun: false });
      expect(m.damaged.map((d) => d.record)).toEqual(expect.arrayContaining(m.damaged.length === 0 ? [] : ["step_pointer"]));
      expect(kills, "owners killed during the removals").toBeGreaterThanOrEqual(1);

      for (const id of ["p", member]) {
        expect(await owner.runtime.status(id)).toBeNull();
        expect(await keysOf(owner, id), id).toEqual([]);
      }
      for (const state of [undefined, "failed", "succeeded", "cancelled", "awaiting_signal"] as const) {
        const page = await owner.runtime.listRuns({ limit: 1000, ...(state === undefined ? {} : { state }) });
        expect(page.unreadable ?? []).toEqual([]);
        expect(page.runs.map((r) => r.runId)).not.toContain("p");
        expect(page.runs.map((r) => r.runId)).not.toContain(member);
      }
      expect((await owner.runtime.wait(child)).termination.status).toBe("cancelled");
      expect(await owner.runtime.group("g").status()).toMatchObject({ total: 2, unsubmitted: 0, failed: 1, pending: 1 });
      expect(await owner.runtime.status("bystander")).toMatchObject({ state: "pending", step: 1 });
      expect(await owner.runtime.status(other)).toMatchObject({ state: "pending", step: 1 });

      // The CLI: the removed run is not found; a healthy active run is refused unless --end-active, then removed.
      const cli = async (...words: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main([words[0]!, words[1]!, url, ...words.slice(2), "--name", "app", "--timeout", "60000"], {
          out: (t) => out.push(t),
          err: (t) => err.push(t),
          color: false,
        });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };
      expect((await cli("runs", "repair", "p", "--remove")).code).toBe(EXIT.notFound);
      const refused = await cli("runs", "repair", "bystander", "--remove");
      expect(refused.code).toBe(EXIT.refused);
      expect(refused.err).toMatch(/run "bystander" was not removed: it is active.*--end-active/);
      const plan = await cli("runs", "repair", "bystander", "--remove", "--end-active", "--dry-run");
      expect(plan.code, plan.err).toBe(EXIT.ok);
      expect(plan.out).toMatch(/dry run, nothing written: the removal would take its run record and step pointer/);
      expect(await owner.runtime.status("bystander")).toMatchObject({ state: "pending", step: 1 });
      const removed = await cli("runs", "repair", "bystander", "--remove", "--end-active", "--json");
      expect(removed.code, removed.err).toBe(EXIT.ok);
      expect(JSON.parse(removed.out)).toMatchObject({ runId: "bystander", action: "removed", damaged: [] });
      expect(await keysOf(owner, "bystander")).toEqual([]);
    } finally {
      await owner.stop();
    }
  } finally {
    await client.close();
  }
}

const TIMEOUT = loadLimitTimeout(300_000);

describe("taquba runs repair --remove across owners killed at random writes", () => {
  it("on a directory store", { timeout: TIMEOUT }, async () => {
    const dir = await tempDir();
    await scenario({ dir }, pathToFileURL(dir).href);
  });

  describe("on the S3 protocol server", () => {
    const s3 = useS3Server();
    it("the same", { timeout: TIMEOUT }, async () => {
      const spec: StoreSpec = { bucket: s3.bucket, prefix: "remove-crash", clientConfig: { ...s3.clientConfig } as Record<string, unknown> };
      await withS3Environment(s3, () => scenario(spec, `s3://${s3.bucket}/remove-crash`));
    });
  });
});
