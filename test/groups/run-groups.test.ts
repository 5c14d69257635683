/**
 * @module Run groups: member run ids, submit and results, resubmission,
 * resume after a restart, cancel, forget, retention and bad input.
 */
import { describe, expect, it } from "vitest";
import { InputMismatchError, MAX_RUN_ID_LEN, MemoryStore, RunId, StepError, StepOutcome, ValidationError, type StepRunner } from "taquba";
import { GroupActiveError, GroupNotFoundError } from "../../runtime/workflow/groups/group-errors.js";
import { overInline, until } from "../workflow/helpers.js";
import { collect, dec, enc, keysUnder, openGroupEnv } from "./helpers.js";
import { runResultPrefix, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";

/** Input "ok:x" succeeds with "done:x", "fail" fails, "flaky" throws transiently on its first attempt, "slow" waits for `release`. */
function scriptedRunner(): { runner: StepRunner; calls: string[]; release: () => void } {
  const calls: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const runner: StepRunner = {
    async runStep(step) {
      const input = dec(step.payload);
      calls.push(`${step.runId}:${input}`);
      await step.runMemo.put("seen", step.payload);
      if (input.startsWith("ok:")) return StepOutcome.succeed(enc(`done:${input.slice(3)}`));
      // A result too large for the terminal record: written as a run result record.
      if (input.startsWith("big:")) return StepOutcome.succeed(overInline(`done:${input.slice(4)}`));
      if (input === "fail") return StepOutcome.fail("no");
      if (input === "flaky" && step.attempt === 1) throw StepError.transient(new Error("blip"));
      if (input === "flaky") return StepOutcome.succeed(enc("recovered"));
      if (input === "slow") {
        await released;
        return StepOutcome.succeed(enc("slow-done"));
      }
      throw StepError.permanent(new Error(`unexpected input ${input}`));
    },
  };
  return { runner, calls, release };
}

describe("run groups", () => {
  it("derive member run ids from the group id and key, within MAX_RUN_ID_LEN, distinct per group and key", async () => {
    const env = await openGroupEnv(scriptedRunner().runner, { start: false });
    const a = env.runtime.group("batch-1");
    const b = env.runtime.group("batch-2");
    const long = "x/".repeat(200);
    for (const id of [a.runIdOf("k1"), a.runIdOf(long), a.runIdOf("ключ"), b.runIdOf("k1")]) {
      expect(RunId.isValid(id)).toBe(true);
      expect(id.length).toBeLessThanOrEqual(MAX_RUN_ID_LEN);
    }
    expect(a.runIdOf("k1")).not.toBe(b.runIdOf("k1"));
    expect(a.runIdOf("k1")).toBe(env.runtime.group("batch-1").runIdOf("k1"));
    expect(a.runIdOf(long)).not.toBe(a.runIdOf(`${long}x`));
    expect(() => a.runIdOf("")).toThrow(ValidationError);
    await env.stop();
  });

  it("submit runs every member and results yields each termination, also those before the call, with outcomes", async () => {
    const { runner } = scriptedRunner();
    const env = await openGroupEnv(runner);
    const group = env.runtime.group("g");
    const sub = await group.submit([
      { key: "a", input: enc("ok:a") },
      { key: "b", input: enc("fail") },
      { key: "c", input: enc("flaky") },
    ]);
    expect(sub.submitted).toBe(3);
    await env.runtime.wait(group.runIdOf("a"));
    const results = await collect(group.results());
    const byKey = Object.fromEntries(results.map((r) => [r.key, r]));
    expect(Object.keys(byKey).sort()).toEqual(["a", "b", "c"]);
    expect(byKey.a).toMatchObject({ status: "succeeded", runId: group.runIdOf("a") });
    expect(dec(byKey.a!.outcome!.result)).toBe("done:a");
    expect(byKey.b).toMatchObject({ status: "failed", error: "no", errorKind: "runner" });
    expect(byKey.c).toMatchObject({ status: "succeeded" });
    expect(dec(byKey.c!.outcome!.result)).toBe("recovered");
    expect(await group.status()).toEqual({ total: 3, unsubmitted: 0, pending: 0, running: 0, succeeded: 2, failed: 1, cancelled: 0 });
    await env.stop();
  });

  it("results wakes on in-process terminations, with no clock movement (the poll interval is an hour)", async () => {
    const { runner, release } = scriptedRunner();
    const env = await openGroupEnv(runner);
    const group = env.runtime.group("wake");
    await group.submit([
      { key: "fast", input: enc("ok:1") },
      { key: "slow", input: enc("slow") },
    ]);
    const seen: string[] = [];
    const done = (async () => {
      for await (const r of group.results()) seen.push(r.key);
    })();
    await env.runtime.wait(group.runIdOf("fast"));
    expect((await group.status())?.running).toBe(1);
    release();
    await done;
    expect(seen.sort()).toEqual(["fast", "slow"]);
    await env.stop();
  });

  it("a second submit of the same set reruns only failed members; a different input for a key changes nothing", async () => {
    let failB = true;
    const calls: string[] = [];
    const runner: StepRunner = {
      async runStep(step) {
        calls.push(dec(step.payload));
        if (dec(step.payload) === "b" && failB) return StepOutcome.fail("not yet");
        return StepOutcome.succeed(step.payload);
      },
    };
    const env = await openGroupEnv(runner);
    const group = env.runtime.group("again");
    const members = [
      { key: "a", input: enc("a") },
      { key: "b", input: enc("b") },
    ];
    await group.submit(members);
    await collect(group.results());
    expect(calls.sort()).toEqual(["a", "b"]);
    await expect(group.submit([{ key: "a", input: enc("other") }])).rejects.toBeInstanceOf(InputMismatchError);
    failB = false;
    const second = await group.submit(members);
    expect(second.members.map((m) => [m.key, m.submission])).toEqual([
      ["a", "succeeded"],
      ["b", "submitted"],
    ]);
    await env.runtime.wait(group.runIdOf("b"));
    const results = await collect(group.results());
    expect(results.map((r) => [r.key, r.status]).sort()).toEqual([
      ["a", "succeeded"],
      ["b", "succeeded"],
    ]);
    expect(calls.sort()).toEqual(["a", "b", "b"]);
    await env.stop();
  });

  it("submitting an active member again is a no-op", async () => {
    const { runner, calls, release } = scriptedRunner();
    const env = await openGroupEnv(runner);
    const group = env.runtime.group("active");
    await group.submit([{ key: "s", input: enc("slow") }]);
    const again = await group.submit([{ key: "s", input: enc("slow") }]);
    expect(again.members[0]?.submission).toBe("active");
    release();
    await collect(group.results());
    expect(calls).toHaveLength(1);
    await env.stop();
  });

  it("resume after a restart runs again, from the manifest alone, only members that did not succeed", async () => {
    const store = new MemoryStore();
    let failing = true;
    const calls: string[] = [];
    const runner: StepRunner = {
      async runStep(step) {
        calls.push(dec(step.payload));
        return failing && dec(step.payload).startsWith("f") ? StepOutcome.fail("first time") : StepOutcome.succeed(step.payload);
      },
    };
    const first = await openGroupEnv(runner, { store });
    await first.runtime.group("resumable").submit([
      { key: "s1", input: enc("s1") },
      { key: "f1", input: enc("f1") },
      { key: "f2", input: enc("f2") },
    ]);
    await collect(first.runtime.group("resumable").results());
    await first.stop();

    failing = false;
    const second = await openGroupEnv(runner, { store });
    const group = second.runtime.group("resumable");
    // Every member terminated before this process started: results still reports each.
    expect((await collect(group.results())).map((r) => `${r.key}:${r.status}`).sort()).toEqual(["f1:failed", "f2:failed", "s1:succeeded"]);
    const resumed = await group.resume();
    expect(resumed.submitted).toBe(2);
    await Promise.all(["f1", "f2"].map((k) => second.runtime.wait(group.runIdOf(k))));
    expect(await group.status()).toMatchObject({ succeeded: 3, failed: 0 });
    expect(calls.filter((c) => c === "s1")).toHaveLength(1);
    await expect(second.runtime.group("never").resume()).rejects.toBeInstanceOf(GroupNotFoundError);
    await second.stop();
  });

  it("resume finishes a submission interrupted after the manifest was written", async () => {
    const store = new MemoryStore();
    const { runner } = scriptedRunner();
    const first = await openGroupEnv(runner, { store, start: false });
    const group = first.runtime.group("interrupted");
    await group.submit([{ key: "a", input: enc("ok:a") }]);
    // Simulate the crash: the manifest gains a member whose submission never committed.
    const { encodeManifest, decodeManifest } = await import("../../runtime/workflow/groups/group-records.js");
    const { manifestKey, groupTag } = await import("../../runtime/workflow/groups/group-keys.js");
    const key = manifestKey(first.runtime.memoStore.prefix, groupTag("interrupted"));
    const m = decodeManifest((await store.get(key))!.body, key);
    m.members.push({ key: "b", input: enc("ok:b") });
    await store.put(key, encodeManifest(m));
    await first.stop();

    const second = await openGroupEnv(runner, { store, start: false });
    const g2 = second.runtime.group("interrupted");
    expect(await g2.status()).toMatchObject({ total: 2, unsubmitted: 1 });
    expect((await g2.resume()).members.map((x) => [x.key, x.submission])).toEqual([
      ["a", "active"],
      ["b", "submitted"],
    ]);
    const worker = second.runtime.spawn();
    expect((await collect(g2.results())).map((r) => r.status)).toEqual(["succeeded", "succeeded"]);
    await worker.shutdown();
    await second.stop();
  });

  it("cancel cancels every active member; status counts them", async () => {
    const { runner } = scriptedRunner();
    const env = await openGroupEnv(runner, { start: false });
    const group = env.runtime.group("c");
    await group.submit([
      { key: "a", input: enc("ok:a") },
      { key: "b", input: enc("ok:b") },
    ]);
    expect(await group.status()).toMatchObject({ pending: 2, running: 0 });
    expect(await group.cancel()).toBe(2);
    const results = await collect(group.results());
    expect(results.map((r) => [r.key, r.status, r.errorKind])).toEqual([
      ["a", "cancelled", "cancelled"],
      ["b", "cancelled", "cancelled"],
    ]);
    expect(await group.status()).toMatchObject({ cancelled: 2, pending: 0 });
    expect(await env.runtime.group("unknown").status()).toBeNull();
    await env.stop();
  });

  it("forget removes manifest, member records, memo entries and terminal records; refuses while members are active", async () => {
    const { runner, release } = scriptedRunner();
    const env = await openGroupEnv(runner);
    const group = env.runtime.group("forgettable");
    await group.submit([
      { key: "a", input: enc("big:a") },
      { key: "i", input: enc("ok:i") },
      { key: "s", input: enc("slow") },
    ]);
    await env.runtime.wait(group.runIdOf("a"));
    await expect(group.forget()).rejects.toBeInstanceOf(GroupActiveError);
    release();
    await collect(group.results());
    const memoPrefix = env.runtime.memoStore.prefix;
    expect((await keysUnder(env.store, `${memoPrefix}/memos/${group.runIdOf("a")}/`)).length).toBeGreaterThan(0);
    expect(await keysUnder(env.store, runResultPrefix(memoPrefix, group.runIdOf("a")))).toHaveLength(1);
    // A small result is kept in the member's terminal record, and goes with it.
    expect(dec((await env.runtime.outcome(group.runIdOf("i")))!.result)).toBe("done:i");
    expect(await keysUnder(env.store, runResultPrefix(memoPrefix, group.runIdOf("i")))).toEqual([]);
    expect(await group.forget()).toBe(true);
    expect(await group.status()).toBeNull();
    expect((await env.queue.kvScan("workflow/groups/")).entries).toEqual([]);
    expect(await env.runtime.status(group.runIdOf("a"))).toBeNull();
    expect(await env.queue.kvGet(terminalRecordKey("workflow-steps", group.runIdOf("i")))).toBeNull();
    expect(await env.runtime.outcome(group.runIdOf("i"))).toBeNull();
    expect(await keysUnder(env.store, `${memoPrefix}/memos/${group.runIdOf("a")}/`)).toEqual([]);
    expect(await keysUnder(env.store, runResultPrefix(memoPrefix, group.runIdOf("a")))).toEqual([]);
    expect(await keysUnder(env.store, `${memoPrefix}/groups/`)).toEqual([]);
    expect(await group.forget()).toBe(false);
    await env.stop();
  });

  it("group retention removes a group a window after results were consumed, and keeps unconsumed groups", async () => {
    const { runner } = scriptedRunner();
    const env = await openGroupEnv(runner, { start: true, configure: (b) => b.groupRetention(60_000) });
    const consumed = env.runtime.group("consumed");
    const unread = env.runtime.group("unread");
    await consumed.submit([{ key: "a", input: enc("ok:a") }]);
    await unread.submit([{ key: "a", input: enc("ok:a") }]);
    await env.runtime.wait(unread.runIdOf("a"));
    await collect(consumed.results());
    expect(await env.runtime.sweepGroups()).toBe(0);
    env.clock.advance(59_999);
    expect(await env.runtime.sweepGroups()).toBe(0);
    env.clock.advance(1);
    expect(await env.runtime.sweepGroups()).toBe(1);
    expect(await consumed.status()).toBeNull();
    expect(await env.runtime.status(consumed.runIdOf("a"))).toBeNull();
    expect(await unread.status()).toMatchObject({ succeeded: 1 });
    expect((await env.queue.kvScan("workflow/group-terminals/")).entries).toEqual([]);
    await env.stop();
  });

  it("rejects bad input before writing anything", async () => {
    const env = await openGroupEnv(scriptedRunner().runner, { start: false });
    const group = env.runtime.group("bad");
    await expect(group.submit([{ key: "", input: enc("x") }])).rejects.toBeInstanceOf(ValidationError);
    await expect(group.submit([{ key: "a", input: "x" as unknown as Uint8Array }])).rejects.toBeInstanceOf(ValidationError);
    await expect(
      group.submit([
        { key: "a", input: enc("x") },
        { key: "a", input: enc("x") },
      ]),
    ).rejects.toBeInstanceOf(ValidationError);
    await expect(group.submit([{ key: "a", input: enc("x") }], { headers: { "workflow.x": "1" } })).rejects.toThrow(/reserved/);
    expect(await group.status()).toBeNull();
    expect(() => env.runtime.group("")).toThrow(ValidationError);
    await env.stop();
  });

  it("results notices a termination committed without an in-process announcement within the poll interval", async () => {
    const { runner } = scriptedRunner();
    const env = await openGroupEnv(runner, { start: false });
    const group = env.runtime.group("remote");
    await group.submit([{ key: "a", input: enc("ok:a") }]);
    const seen: string[] = [];
    const done = (async () => {
      for await (const r of group.results()) seen.push(`${r.key}:${r.status}`);
    })();
    // Another process's termination: its member record changes, nothing is announced here.
    const { encodeGroupMember } = await import("../../runtime/workflow/records/records.js");
    const { groupMemberKey, groupTag } = await import("../../runtime/workflow/groups/group-keys.js");
    await env.queue.kvPut(
      groupMemberKey(env.runtime.queueName, groupTag("remote"), "a"),
      encodeGroupMember({ key: "a", runId: group.runIdOf("a"), incarnation: "x", state: "succeeded", terminatedAtMs: env.clock.now() }),
    );
    for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
    expect(seen).toEqual([]);
    env.clock.advance(3_600_000);
    await done;
    expect(seen).toEqual(["a:succeeded"]);
    await env.stop();
  });

  it("concurrent submissions of one set submit each member once", async () => {
    const calls: string[] = [];
    const runner: StepRunner = {
      async runStep(step) {
        calls.push(dec(step.payload));
        return StepOutcome.succeed(step.payload);
      },
    };
    const env = await openGroupEnv(runner);
    const group = env.runtime.newGroup();
    const members = Array.from({ length: 20 }, (_, i) => ({ key: `m${i}`, input: enc(`m${i}`) }));
    const [a, b] = await Promise.all([group.submit(members), env.runtime.group(group.id).submit(members)]);
    expect(a.submitted + b.submitted).toBe(20);
    expect(await group.keys()).toEqual(members.map((m) => m.key));
    expect((await collect(group.results())).length).toBe(20);
    expect(calls.sort()).toEqual(members.map((m) => m.key).sort());
    await env.stop();
  });

  it("the running worker sweeps groups whose retention window passed", async () => {
    const { runner } = scriptedRunner();
    const env = await openGroupEnv(runner, { configure: (b) => b.groupRetention(1_000) });
    const group = env.runtime.group("swept-by-worker");
    await group.submit([{ key: "a", input: enc("ok:a") }]);
    await collect(group.results());
    env.clock.advance(3_600_000);
    await until(async () => (await group.status()) === null, "the worker sweeping the group");
    await env.stop();
  });
});
