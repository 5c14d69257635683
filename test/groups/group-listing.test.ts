/**
 * @module `listGroups`: groups newest first with their member counts, pages,
 * the same after a restart, member rows naming their group, a redriven
 * member counted active again, and a forgotten group gone from the listing
 * with its members' index entries and history.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome, ValidationError, type StepRunner } from "taquba";
import { until } from "../workflow/helpers.js";
import { collect, dec, enc, openGroupEnv } from "./helpers.js";

/** While set, input "fail" waits for it before failing (a redriven member stays active until the test looked). */
let failGate: Promise<void> | undefined;

/** Succeeds, except inputs "fail" (fail) and "wait" (waits for a signal on its run id). */
const runner: StepRunner = {
  async runStep(s) {
    const what = dec(s.payload);
    if (what === "fail") {
      await failGate;
      return StepOutcome.fail("nope");
    }
    if (what === "wait" && s.stepNumber === 0) return StepOutcome.continueOnSignal(enc("waited"), `w:${s.runId}`, 3_600_000);
    return StepOutcome.succeed(enc("ok"));
  },
};

describe("listGroups", () => {
  it("lists groups newest first with member counts, across a restart and after a redrive", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const env = await openGroupEnv(runner, { store, clock });
    const a = env.runtime.group("import-a");
    await a.submit([
      { key: "1", input: enc("ok") },
      { key: "2", input: enc("fail") },
      { key: "3", input: enc("wait") },
    ]);
    clock.advance(1000);
    const b = env.runtime.group("import-b");
    await b.submit([{ key: "x", input: enc("ok") }]);
    await until(async () => {
      const page = await env.runtime.listGroups();
      return page.groups.length === 2 && page.groups.every((g) => g.members.active <= 1) && page.groups[1]!.members.active === 1;
    }, "members settled");
    const page = await env.runtime.listGroups();
    expect(page.groups).toEqual([
      { groupId: "import-b", createdAtMs: 1_700_000_001_000, members: { total: 1, active: 0, succeeded: 1, failed: 0, cancelled: 0 } },
      { groupId: "import-a", createdAtMs: 1_700_000_000_000, members: { total: 3, active: 1, succeeded: 1, failed: 1, cancelled: 0 } },
    ]);
    // Member rows name their group by its id.
    const failed = (await env.runtime.listRuns({ state: "failed" })).runs;
    expect(failed.map((r) => r.group)).toEqual([{ id: "import-a", key: "2" }]);

    const first = await env.runtime.listGroups({ limit: 1 });
    expect(first.groups.map((g) => g.groupId)).toEqual(["import-b"]);
    const second = await env.runtime.listGroups({ limit: 1, cursor: first.nextCursor! });
    expect(second).toEqual({ groups: [page.groups[1]] });
    for (const bad of [{ limit: 0 }, { limit: 101 }, { cursor: "x" }, { cursor: "r1.abc" }]) {
      await expect(env.runtime.listGroups(bad as never)).rejects.toBeInstanceOf(ValidationError);
    }
    await env.stop();

    const again = await openGroupEnv(runner, { store, clock });
    expect(await again.runtime.listGroups()).toEqual(page);
    // A failed member redriven counts as active again (and fails again here, once the test looked:
    // a step that fails at once could otherwise end before the listing is read).
    let release = () => {};
    failGate = new Promise<void>((r) => {
      release = r;
    });
    try {
      await again.runtime.retryRun(a.runIdOf("2"));
      expect((await again.runtime.listGroups()).groups[1]!.members).toMatchObject({ active: 2, failed: 0 });
    } finally {
      release();
      failGate = undefined;
    }
    expect((await again.runtime.wait(a.runIdOf("2"))).termination.status).toBe("failed");
    expect((await again.runtime.listGroups()).groups[1]!.members).toMatchObject({ active: 1, failed: 1 });
    await again.stop();
  });

  it("forgetting a group removes it and its members' index entries and history", async () => {
    const env = await openGroupEnv(runner);
    const g = env.runtime.group("temp");
    await g.submit([
      { key: "1", input: enc("ok") },
      { key: "2", input: enc("fail") },
    ]);
    await collect(g.results());
    expect((await env.runtime.listRuns()).runs).toHaveLength(2);
    expect(await g.forget()).toBe(true);
    expect(await env.runtime.listGroups()).toEqual({ groups: [] });
    expect((await env.runtime.listRuns()).runs).toEqual([]);
    for (const p of ["workflow/run-index/", "workflow/run-ended/", "workflow/history/", "workflow/group-index/"]) {
      expect((await env.queue.kvScan(p)).entries, p).toEqual([]);
    }
    await env.stop();
  });
});
