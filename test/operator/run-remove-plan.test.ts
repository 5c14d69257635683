/**
 * @module `taquba runs repair --remove --plan <token>` over a directory
 * beside a running owner: the dry run prints the removal's plan token; the
 * removal confirmed with it is refused (exit 4, nothing written) once the
 * run changed since the dry run, and carried out with the plan the run
 * gives now. The dashboard's repair endpoint takes the same: a removal
 * posted with a plan the run no longer gives is answered 409.
 */
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { openServedOwner, waitingSteps } from "./fixtures/signal-owner.js";
import { dashboardOver } from "./fixtures/store-dashboard.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-run-remove-plan-");
const Q = "workflow-steps";
const enc = new TextEncoder();
const NOT_A_RECORD = new Uint8Array([0xc1, 0xff, 0x00]);
const TIMEOUT_MS = scaledForLoad(60_000);
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, TIMEOUT_MS);

describe("taquba runs repair --remove --plan", () => {
  it(
    "refuses a removal whose run changed since its dry run, and removes by the plan it gives now",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const owner = await openServedOwner(store, waitingSteps());
      stops.push(() => owner.stop());
      const url = pathToFileURL(dir).href;
      const cli = async (...words: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main(["runs", "repair", url, ...words, "--name", "app", "--timeout", "60000"], {
          out: (t: string) => out.push(t),
          err: (t: string) => err.push(t),
          color: false,
        });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };
      await owner.runtime.submit({ runId: "r", input: enc.encode("x") });
      await owner.runtime.wait("r");

      const dry = await cli("r", "--remove", "--dry-run");
      expect(dry.code, dry.err).toBe(EXIT.ok);
      const token = /\nplan ([0-9a-f]{64}): confirm this plan with --plan \1/.exec(dry.out)?.[1];
      expect(token, dry.out).toBeDefined();

      // The run's end record is damaged after the dry run: the removal confirmed with the old plan is refused.
      await owner.queue.kvPut(terminalRecordKey(Q, "r"), NOT_A_RECORD);
      const refused = await cli("r", "--remove", "--plan", token!);
      expect(refused.code).toBe(EXIT.refused);
      expect(refused.err).toMatch(/the run changed since you looked/);
      expect(await owner.queue.kvGet(terminalRecordKey(Q, "r"))).toEqual(NOT_A_RECORD);

      // The dashboard's repair endpoint: a removal posted with the old plan is answered 409, nothing written.
      const { dashboard } = await dashboardOver(dir, store, Q, stops);
      const post = async (body: unknown) => {
        const res = await fetch(new URL(`/api/runs/r/repair`, dashboard.url), {
          method: "POST",
          headers: { "content-type": "application/json", origin: new URL(dashboard.url).origin },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as { plan?: string; action?: string; error?: { message: string } } };
      };
      const posted = await post({ remove: true, plan: token });
      expect(posted.status).toBe(409);
      expect(posted.body.error?.message).toMatch(/the run changed since you looked/);
      expect(await owner.queue.kvGet(terminalRecordKey(Q, "r"))).toEqual(NOT_A_RECORD);

      // The plan it gives now, confirmed, is carried out.
      const again = await post({ remove: true, dryRun: true });
      expect(again.status).toBe(200);
      const plan = again.body.plan!;
      expect(plan).toMatch(/^[0-9a-f]{64}$/);
      expect(plan).not.toBe(token);
      const removed = await cli("r", "--remove", "--plan", plan);
      expect(removed.code, removed.err).toBe(EXIT.ok);
      expect(removed.out).toMatch(/removed:/);
      expect(await owner.queue.kvGet(terminalRecordKey(Q, "r"))).toBeNull();
    },
    TIMEOUT_MS,
  );
});
