/**
 * @module The dashboard's repair and retry routes (`POST
 * /api/runs/{id}/repair`, `.../retry`) from a caller who gets the body
 * wrong: a misspelt option, a field the action does not take, an option of
 * the wrong type, a body that is no object. The routes read only the field
 * they knew, so `{ "dryrun": true }` asked the owner for a real repair
 * (which ends an active run) and `{ "fromstep": 0 }` for a retry from the
 * failed step instead of step 0. Each must answer 400 naming the option,
 * without sending anything to the owner.
 */
import { describe, expect, it } from "vitest";
import { withOwnerlessDashboard } from "./fixtures/ownerless-dashboard.js";

const BAD_BODIES: readonly (readonly [string, RegExp])[] = [
  ...['{"dryrun":true}', '{"dry_run":true}', '{"dryRun":true,"force":true}', '{"dryRun":"yes"}', '{"dryRun":1}', "[true]", '"dry"', "7"].map(
    (b) => [`repair ${b}`, /dryRun|RepairRunOptions/] as const,
  ),
  ...['{"fromstep":0}', '{"from_step":0}', '{"fromStep":0,"force":true}', '{"fromStep":"0"}', '{"fromStep":-1}', '{"fromStep":1.5}', "[0]", '"0"'].map(
    (b) => [`retry ${b}`, /fromStep|RetryRunOptions|retryRun/] as const,
  ),
];

describe("the dashboard's repair and retry routes with a wrong body", () => {
  it("answers 400 naming the option, before asking the owner for anything", async () => {
    await withOwnerlessDashboard("taquba-dash-repair-", async (base) => {
      for (const [request, expected] of BAD_BODIES) {
        const [action, body] = [request.slice(0, request.indexOf(" ")), request.slice(request.indexOf(" ") + 1)];
        // No owner serves this store: a request that reached the inbox would wait for one, not answer.
        const res = await fetch(`${base}/api/runs/some-run/${action}`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json", origin: base },
          signal: AbortSignal.timeout(10_000),
        });
        const answer = (await res.json()) as { error?: { message?: string } };
        expect(res.status, `${request}: ${JSON.stringify(answer)}`).toBe(400);
        expect(answer.error?.message, request).toMatch(expected);
      }
    });
  });
});
