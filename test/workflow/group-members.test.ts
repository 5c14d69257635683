/**
 * @module The run-group member records the runtime writes with each
 * termination (its part of run groups).
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, ValidationError } from "taquba";
import { decodeGroupMember } from "../../runtime/workflow/records/records.js";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";

describe("run-group member records (the runtime's part of run groups)", () => {
  it("are written with the submission and rewritten by the terminating settlement on every path", async () => {
    const env = await openEnv(
      runnerOf(async (s) => (dec(s.payload) === "ok" ? StepOutcome.succeed(s.payload) : StepOutcome.fail("no"))),
      { start: false },
    );
    const member = async (key: string) => {
      const k = `workflow/groups/workflow-steps/g1/${key}`;
      const b = await env.queue.kvGet(k);
      return b === null ? null : decodeGroupMember(b, k);
    };
    await env.runtime.submitGroupMember("g1", "a", { input: enc("ok"), runId: "g1-a" });
    await env.runtime.submitGroupMember("g1", "b", { input: enc("bad"), runId: "g1-b" });
    await env.runtime.submitGroupMember("g1", "c", { input: enc("ok"), runId: "g1-c" });
    expect(await member("a")).toMatchObject({ key: "a", runId: "g1-a", state: "active" });
    expect(await env.runtime.cancel("g1-c")).toBe(true);
    expect(await member("c")).toMatchObject({ state: "cancelled", errorKind: "cancelled" });
    const worker = env.runtime.spawn();
    await env.runtime.wait("g1-a");
    await env.runtime.wait("g1-b");
    expect(await member("a")).toMatchObject({ state: "succeeded" });
    expect(await member("b")).toMatchObject({ state: "failed", error: "no", errorKind: "runner" });
    await worker.shutdown();
    await env.stop();
  });

  it("a display id with a lone surrogate is refused before anything is stored (UTF-8 would store U+FFFD)", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    try {
      for (const displayId of ["g\ud800", "\udc00", "x\ud83d"]) {
        const refused = env.runtime.submitGroupMember("g1", "a", { input: enc("ok"), runId: "g1-a" }, displayId);
        await expect(refused).rejects.toThrow(ValidationError);
        await expect(env.runtime.submitGroupMember("g1", "a", { input: enc("ok"), runId: "g1-a" }, displayId)).rejects.toThrow(
          /run group's display id .* well-formed text/,
        );
      }
      expect(await env.queue.kvGet("workflow/groups/workflow-steps/g1/a")).toBeNull();
      expect(await env.runtime.status("g1-a")).toBeNull();
      // A well-formed one (an astral character is a whole pair) is stored as given.
      await env.runtime.submitGroupMember("g1", "a", { input: enc("ok"), runId: "g1-a" }, "g \ud83d\ude00");
      expect(await env.queue.kvGet("workflow/groups/workflow-steps/g1/a")).not.toBeNull();
    } finally {
      await env.stop();
    }
  });
});
