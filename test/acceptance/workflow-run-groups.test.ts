/**
 * Acceptance: run groups, part of the "Workflow runtime" section of the
 * public API contract (`runtime.group(id)`, `runtime.newGroup()`).
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  RunGroup,
  StepOutcome,
  WorkflowRuntime,
  type GroupSubmitOutcome,
  type MemberResult,
  type RunOptions,
  type RunOutcome,
  type StepRunner,
} from "taquba";
import { collect, dec, enc, until } from "./support.js";

const HOUR = 3_600_000;

/** "ok:x" succeeds with "done:x"; "fail" fails; "wait" waits an hour, then succeeds. */
const scripted: StepRunner = {
  async runStep(s) {
    const input = dec(s.payload);
    if (input.startsWith("ok:")) return StepOutcome.succeed(enc(`done:${input.slice(3)}`));
    if (input === "fail") return StepOutcome.fail("no");
    if (input === "wait") return s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, HOUR) : StepOutcome.succeed(enc("waited"));
    return StepOutcome.fail(`unexpected ${input}`);
  },
};

async function start() {
  const store = new MemoryStore();
  const clock = new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "groups", { clock, flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, scripted, NoopTerminalHook).clock(clock).build();
  const handle = runtime.spawn();
  return {
    clock,
    runtime,
    async stop() {
      await handle.shutdown();
      await queue.close();
    },
  };
}

describe("run groups", () => {
  it("have the documented shapes", () => {
    expectTypeOf<RunGroup["submit"]>().parameters.toEqualTypeOf<
      [members: readonly { readonly key: string; readonly input: Uint8Array }[], options?: RunOptions]
    >();
    expectTypeOf<RunGroup["submit"]>().returns.toEqualTypeOf<Promise<GroupSubmitOutcome>>();
    expectTypeOf<ReturnType<RunGroup["results"]>>().toMatchTypeOf<AsyncIterable<MemberResult>>();
    expectTypeOf<MemberResult>().toHaveProperty("key").toEqualTypeOf<string>();
    expectTypeOf<MemberResult>().toHaveProperty("status").toEqualTypeOf<"succeeded" | "failed" | "cancelled">();
    expectTypeOf<MemberResult>().toHaveProperty("outcome").toEqualTypeOf<RunOutcome | undefined>();
    expectTypeOf<WorkflowRuntime["group"]>().returns.toEqualTypeOf<RunGroup>();
    expectTypeOf<WorkflowRuntime["newGroup"]>().returns.toEqualTypeOf<RunGroup>();
  });

  it("group(id).submit(members, options?) runs every member; results() yields each with its outcome; status() counts", async () => {
    const env = await start();
    const group = env.runtime.group("batch-1");
    const sub = await group.submit(
      [
        { key: "a", input: enc("ok:a") },
        { key: "b", input: enc("fail") },
      ],
      { headers: { tenant: "acme" } },
    );
    expect(sub.submitted).toBe(2);
    const results = await collect(group.results());
    const byKey = Object.fromEntries(results.map((r) => [r.key, r]));
    expect(byKey.a).toMatchObject({ key: "a", status: "succeeded" });
    expect(dec(byKey.a!.outcome!.result)).toBe("done:a");
    expect(byKey.a!.outcome!.headers).toEqual({ tenant: "acme" });
    expect(byKey.b).toMatchObject({ key: "b", status: "failed" });
    expect(await group.status()).toMatchObject({ pending: 0, running: 0, succeeded: 1, failed: 1, cancelled: 0 });
    // Submitting again is idempotent for the member that succeeded.
    const again = await group.submit([{ key: "a", input: enc("ok:a") }]);
    expect(again.submitted).toBe(0);
    expect(await group.forget()).toBe(true);
    await env.stop();
  });

  it("newGroup() has a fresh id; cancel() cancels active members; resume() reruns the ones that did not succeed", async () => {
    const env = await start();
    const group = env.runtime.newGroup();
    expect(group).toBeInstanceOf(RunGroup);
    expect(env.runtime.newGroup().id).not.toBe(group.id);
    await group.submit([
      { key: "slow", input: enc("wait") },
      { key: "quick", input: enc("ok:q") },
    ]);
    await until(
      async () => (await group.status())?.succeeded === 1 && (await env.runtime.status(group.runIdOf("slow")))?.step === 1,
      "quick done, slow waiting",
    );
    expect(await group.status()).toMatchObject({ pending: 1, succeeded: 1 });
    await group.cancel();
    const results = await collect(group.results());
    expect(results.find((r) => r.key === "slow")).toMatchObject({ status: "cancelled" });
    expect(await group.status()).toMatchObject({ cancelled: 1, succeeded: 1 });

    const resumed = await group.resume();
    expect(resumed.submitted).toBe(1);
    await until(async () => (await env.runtime.status(group.runIdOf("slow")))?.step === 1, "slow waiting again");
    env.clock.advance(HOUR);
    await until(async () => (await group.status())?.succeeded === 2, "both succeeded");
    await group.forget();
    expect(await group.status()).toBeNull();
    await env.stop();
  });
});
