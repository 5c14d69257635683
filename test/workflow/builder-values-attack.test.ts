/**
 * @module The runtime builder's numeric and switch options given values
 * past their bounds or of the wrong type: each refused where it is set,
 * with a ValidationError naming the option and the value, instead of a
 * runtime whose worker fails every claim in the background (a step lease
 * of 1e30 ms) or a switch a string turns on ("false" is truthy).
 */
import { describe, expect, it } from "vitest";
import { MAX_DELAY_MS, NoopTerminalHook, StepOutcome, ValidationError, WorkflowRuntime, type WorkflowRuntimeBuilder } from "taquba";
import { enc, openEnv, runnerOf } from "./helpers.js";

const runner = runnerOf(async () => StepOutcome.succeed(enc("done")));

function refusal(f: () => unknown): ValidationError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error("not refused");
}

describe("the runtime builder's options past their bounds", () => {
  it("a step lease longer than any delay (1e30, 2^53, 10 years + 1 ms) is refused naming leaseMs; 10 years is taken and runs", async () => {
    const env = await openEnv(runner, { start: false });
    const builder = (): WorkflowRuntimeBuilder => WorkflowRuntime.builder(env.queue, env.store, runner, NoopTerminalHook);
    for (const bad of [1e30, 2 ** 53, MAX_DELAY_MS + 1, Number.MAX_VALUE]) {
      expect(refusal(() => builder().leaseMs(bad)).message).toMatch(/leaseMs must be .*10 years.*got/);
    }
    const runtime = builder().leaseMs(MAX_DELAY_MS).build();
    const worker = runtime.spawn();
    const { runId } = await runtime.submit({ input: enc("x") });
    expect((await runtime.wait(runId)).termination.status).toBe("succeeded");
    await worker.shutdown();
    await env.stop();
  });

  it("stepOutputReplay takes only a boolean: a string, a number or null is refused naming the switch", async () => {
    const env = await openEnv(runner, { start: false });
    const b = WorkflowRuntime.builder(env.queue, env.store, runner, NoopTerminalHook);
    for (const bad of ["false", 0, 1, null]) {
      expect(refusal(() => b.stepOutputReplay(bad as unknown as boolean)).message).toMatch(/stepOutputReplay takes true or false, got/);
    }
    expect(() => b.stepOutputReplay().stepOutputReplay(false).stepOutputReplay(true)).not.toThrow();
    await env.stop();
  });
});
