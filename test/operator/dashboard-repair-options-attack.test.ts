/**
 * @module The dashboard's repair route (`POST /api/runs/{id}/repair`) from a
 * caller who gets its body wrong: a misspelt `dryrun`, a field it does not
 * take, a `dryRun` that is no boolean, a body that is no object. The route
 * read only `dryRun`, so `{ "dryrun": true }` asked the owner for a real
 * repair (which ends an active run). Each must answer 400 naming the
 * option, without sending anything to the owner.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue } from "taquba";
import { OperatorSession } from "../../operator/cli/session.js";
import { startDashboard } from "../../operator/dashboard/server.js";
import { Operations } from "../../operator/inspect/operations.js";
import { enc } from "../queue/helpers.js";

const NAME = "ops";
const BAD_BODIES = ['{"dryrun":true}', '{"dry_run":true}', '{"dryRun":true,"force":true}', '{"dryRun":"yes"}', '{"dryRun":1}', "[true]", '"dry"', "7"];

describe("the dashboard's repair route with a wrong body", () => {
  it("answers 400 naming the option, before asking the owner for anything", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taquba-dash-repair-"));
    const session = new OperatorSession({ storeUrl: pathToFileURL(dir).href, name: NAME, stepQueue: "workflow-steps" });
    let close = async () => {};
    try {
      const queue = await Queue.open(new LocalStore(dir), NAME);
      await queue.enqueue("work", enc("w"));
      await queue.close();
      await session.reader();
      const dashboard = await startDashboard({
        ops: new Operations(session),
        refresh: async () => (await session.reader()).refresh(),
        info: { name: NAME, stepQueue: "workflow-steps", store: "file" },
        port: 0,
      });
      close = () => dashboard.close();
      const base = new URL(dashboard.url).origin;
      for (const body of BAD_BODIES) {
        // No owner serves this store: a request that reached the inbox would wait for one, not answer.
        const res = await fetch(`${base}/api/runs/some-run/repair`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json", origin: base },
          signal: AbortSignal.timeout(10_000),
        });
        const answer = (await res.json()) as { error?: { message?: string } };
        expect(res.status, `${body}: ${JSON.stringify(answer)}`).toBe(400);
        expect(answer.error?.message, body).toMatch(/dryRun|RepairRunOptions/);
      }
    } finally {
      await close();
      await session.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
