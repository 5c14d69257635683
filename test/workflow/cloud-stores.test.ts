/**
 * @module A workflow run end to end across a restart over AzureBlobStore
 * (Azurite on loopback) and over GcsStore (the JSON API stand-in).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AzureBlobStore, GcsStore, StepOutcome, type ObjectStore, type StepRunner } from "taquba";
import { startAzurite, type TestAzurite } from "../support/azurite.js";
import { startGcsServer, type TestGcsServer } from "../support/gcs-server.js";
import { dec, enc, openEnv, until } from "./helpers.js";

vi.setConfig({ testTimeout: 120_000 });

let azurite: TestAzurite;
let gcs: TestGcsServer;
beforeAll(async () => {
  [azurite, gcs] = await Promise.all([startAzurite(), startGcsServer()]);
  await azurite.createContainer("workflows");
}, 60_000);
afterAll(async () => {
  await Promise.all([azurite?.stop(), gcs?.stop()]);
});

const stores: [string, () => ObjectStore][] = [
  ["Azure Blob Storage (Azurite)", () => new AzureBlobStore({ container: "workflows", prefix: "wf", connectionString: azurite.connectionString })],
  ["Google Cloud Storage (stand-in)", () => new GcsStore({ bucket: gcs.bucket, prefix: "wf", apiEndpoint: gcs.endpoint })],
];

describe.each(stores)("workflow over %s", (_name, makeStore) => {
  it("runs a memoized multi-step workflow, survives a restart mid-run, and resumes waiting runs", async () => {
    const store = makeStore();
    let computed = 0;
    const runner: StepRunner = {
      async runStep(s) {
        const v = await s.memo.memoized("v", async () => (computed++, `${dec(s.payload)}+${s.stepNumber}`));
        if (s.stepNumber === 0) return StepOutcome.continueAfter(enc(v), 60_000);
        return s.stepNumber < 2 ? StepOutcome.continueNow(enc(v)) : StepOutcome.succeed(enc(v));
      },
    };
    const env = await openEnv(runner, { store });
    await env.runtime.submit({ input: enc("in"), runId: "cloudrun" });
    const clock = env.clock;
    await until(async () => (await env.runtime.status("cloudrun"))?.step === 1, "step 1 scheduled");
    await env.stop();
    const env2 = await openEnv(runner, { store, clock });
    expect(await env2.runtime.status("cloudrun")).toMatchObject({ state: "pending", step: 1 });
    clock.advance(60_000);
    const end = await env2.runtime.wait("cloudrun");
    expect(dec(end.outcome!.result)).toBe("in+0+1+2");
    expect(computed).toBe(3);
    await env2.stop();
  });
});
