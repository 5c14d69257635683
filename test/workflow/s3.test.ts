/**
 * @module A workflow run over `S3Store` (s3rver on loopback) across a
 * restart.
 */
import { describe, expect, it } from "vitest";
import { S3Store, StepOutcome, type StepRunner } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { dec, enc, openEnv, until } from "./helpers.js";

const server = useS3Server();

describe("workflow over S3 (s3rver on loopback)", () => {
  it("runs a memoized multi-step workflow, survives a restart mid-run, and resumes waiting runs", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: "wf-s3", clientConfig: server.clientConfig });
    let computed = 0;
    const runner: StepRunner = {
      async runStep(s) {
        const v = await s.memo.memoized("v", async () => (computed++, `${dec(s.payload)}+${s.stepNumber}`));
        if (s.stepNumber === 0) return StepOutcome.continueAfter(enc(v), 60_000);
        return s.stepNumber < 2 ? StepOutcome.continueNow(enc(v)) : StepOutcome.succeed(enc(v));
      },
    };
    const env = await openEnv(runner, { store });
    await env.runtime.submit({ input: enc("in"), runId: "s3run" });
    const clock = env.clock;
    await until(async () => (await env.runtime.status("s3run"))?.step === 1, "step 1 scheduled");
    await env.stop();
    const env2 = await openEnv(runner, { store, clock });
    expect(await env2.runtime.status("s3run")).toMatchObject({ state: "pending", step: 1 });
    clock.advance(60_000);
    const end = await env2.runtime.wait("s3run");
    expect(dec(end.outcome!.result)).toBe("in+0+1+2");
    expect(computed).toBe(3);
    await env2.stop();
  });
});
