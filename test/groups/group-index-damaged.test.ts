/**
 * @module A group listing over a damaged index entry. Before, the group was
 * named by its storage tag (20 hex digits) and the reason by the entry's
 * store key, which `taquba groups list` and the dashboard showed as they
 * were. Now the group is named by its id where the entry's bytes still hold
 * it (checked against the tag, the id's hash), else by its creation time,
 * with what still reads its members and how the entry is mended; the other
 * groups are listed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, StepOutcome, type StepRunner } from "taquba";
import { GROUP_INDEX_PREFIX } from "../../runtime/workflow/groups/group-index.js";
import { groupTag } from "../../runtime/workflow/groups/group-keys.js";
import { until } from "../workflow/helpers.js";
import { enc, openGroupEnv, type GroupEnv } from "./helpers.js";

const runner: StepRunner = { runStep: async () => StepOutcome.succeed(enc("ok")) };
const T0 = 1_700_000_000_000;

const envs: GroupEnv[] = [];
afterEach(async () => {
  for (const e of envs.splice(0)) await e.stop();
});

/** Two settled groups, "import-a" then "import-b" a second later. */
async function twoGroups(): Promise<GroupEnv> {
  const env = await openGroupEnv(runner, { store: new MemoryStore(), clock: new MockClock(T0) });
  envs.push(env);
  await env.runtime.group("import-a").submit([
    { key: "1", input: enc("x") },
    { key: "2", input: enc("y") },
  ]);
  env.clock.advance(1000);
  await env.runtime.group("import-b").submit([{ key: "x", input: enc("z") }]);
  await until(async () => (await env.runtime.listGroups()).groups.every((g) => g.members.succeeded === g.members.total), "members ended");
  return env;
}

/** Rewrites the index entry of group "import-a" with `damage` of its stored bytes. */
async function damageEntryOfA(env: GroupEnv, damage: (bytes: Uint8Array) => Uint8Array): Promise<void> {
  const entries = (await env.queue.kvScan(GROUP_INDEX_PREFIX, { limit: 10 })).entries;
  const entry = entries.find((e) => e.key.endsWith(groupTag("import-a")));
  expect(entry, "the index entry of import-a").toBeDefined();
  await env.queue.kvPut(entry!.key, damage(entry!.value));
}

/** The listing's unreadable rows, checked to name no storage key or tag. */
async function unreadableRows(env: GroupEnv) {
  const page = await env.runtime.listGroups();
  expect(page.groups.map((g) => g.groupId)).toEqual(["import-b"]);
  for (const u of page.unreadable ?? []) {
    expect(u.reason).not.toContain("workflow/");
    expect(u.reason).not.toContain(groupTag("import-a"));
  }
  return page.unreadable ?? [];
}

describe("a group listing over a damaged index entry", () => {
  it.each([
    ["a damaged header", (b: Uint8Array) => Uint8Array.of(0xc1, ...b.subarray(1))],
    ["bytes appended", (b: Uint8Array) => Uint8Array.of(...b, 0xc1, 0xff, 0x00)],
    ["a field of another type before it", (b: Uint8Array) => Uint8Array.of(0x82, 0xa1, 0x78, 0xc1, ...b.subarray(3))],
  ])("names the group by its id where the entry still holds it (%s)", async (_what, damage) => {
    const env = await twoGroups();
    await damageEntryOfA(env, damage);
    const rows = await unreadableRows(env);
    expect(rows.map((u) => u.groupId)).toEqual(["import-a"]);
    expect(rows[0]!.reason).toMatch(/^group "import-a": its listing entry is damaged \(.+\), so its members are not counted here; /);
    expect(rows[0]!.reason).toContain('taquba groups show "import-a"');
    expect(rows[0]!.reason).toContain("restore the store from a backup");
    // What the reason says still reads the members does.
    expect((await env.runtime.group("import-a").status())?.succeeded).toBe(2);
  });

  it.each([
    ["cut before its id ends", (b: Uint8Array) => b.subarray(0, b.length - 3)],
    ["an id of another group in it", (b: Uint8Array) => Uint8Array.of(...b.subarray(0, b.length - 8), 0xa8, ...enc("import-b"), 0xc1)],
    ["its id a number", () => Uint8Array.of(0x81, 0xa7, ...enc("groupId"), 0x2a)],
    ["empty", () => new Uint8Array(0)],
  ])("says its id cannot be read, when the group was made and what to do (%s)", async (_what, damage) => {
    const env = await twoGroups();
    await damageEntryOfA(env, damage);
    const rows = await unreadableRows(env);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.reason).toMatch(
      /^a group created at 2023-11-14T22:13:20\.000Z: its listing entry is damaged \(.+\) and its group id cannot be read from it; if you know the group's id, taquba groups show <id> and runtime\.group\(id\)\.status\(\) still read its members; restore the store from a backup/,
    );
    expect((await env.runtime.group("import-a").status())?.succeeded).toBe(2);
  });
});
