/**
 * @module `TaqubaClient.submit` reads the spec and its options once: a
 * getter that throws, or a revoked Proxy, is a `ValidationError` naming the
 * field, with no request written; a getter that answers another input or
 * option on a second read submits what it answered first, the value the
 * client checked. An input whose bytes are gone (a view of a detached
 * buffer) is refused naming the run, not sent as empty input.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, TaqubaClient, type RunSpec } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { flipping, mostReads, revoked, throwing } from "../support/hostile-options.js";
import { refusal } from "../support/refusal.js";
import { openOwner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const tempDir = useTempDirs("taquba-client-reads-");
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

describe("TaqubaClient.submit reads its spec once", () => {
  it("refuses what cannot be read naming it, and submits the input and options first read", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    try {
      const cases: [unknown, RegExp][] = [
        [throwing("input"), /reading RunSpec\.input threw: no input today/],
        [{ input: enc({ n: 1 }), options: throwing("priority") }, /reading RunOptions\.priority threw: no priority today/],
        [{ input: enc({ n: 1 }), options: revoked() }, /RunOptions must be an object, got a revoked Proxy/],
        [{ input: enc({ n: 1 }), options: { headers: throwing("tenant") } }, /reading header "tenant" of RunOptions\.headers threw: no tenant today/],
      ];
      for (const [spec, says] of cases) {
        const err = await refusal(() => client.submit(spec as RunSpec));
        expect([err.message, ...err.issues].join("\n")).toMatch(says);
      }
      // A view of a detached buffer reads as empty: refused naming the run, not submitted as empty input.
      const detached = enc({ n: "gone" });
      structuredClone(detached.buffer, { transfer: [detached.buffer] });
      const gone = await refusal(() => client.submit({ runId: "r-gone", input: detached }));
      expect(gone.message).toMatch(/the input of run "r-gone" is a view of a detached or shrunk ArrayBuffer/);
      const { value, reads } = flipping({
        runId: ["r-1", "r-2"],
        input: [enc({ n: "first" }), enc({ n: "second" })],
        options: [{ maxAttemptsPerStep: 2 }, { maxAttemptsPerStep: 0, tenant: "x" }],
      });
      expect(await client.submit(value as RunSpec)).toMatchObject({ runId: "r-1", newlySubmitted: true });
      expect(mostReads(reads)).toBe(1);
      const end = await client.wait("r-1");
      expect(end.termination.status).toBe("succeeded");
      expect(JSON.parse(new TextDecoder().decode(end.outcome!.result!))).toEqual({ n: "first" });
      expect((await client.listRuns()).runs.map((r) => r.runId)).toEqual(["r-1"]);
    } finally {
      await client.close();
      await owner.stop();
    }
  });
});
