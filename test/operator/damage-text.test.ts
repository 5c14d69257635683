/**
 * @module A damaged record's error put in the operator's terms: the run,
 * signal wait, group member or schedule its key names, what is wrong and
 * what to do, with no stored key; text naming no workflow record is left
 * as it is.
 */
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "taquba";
import { damageText, groupDamageText, runDamageText, withDamageText } from "../../operator/inspect/damage-text.js";
import { damagedItemOf } from "../../runtime/workflow/runs/run-damage.js";
import { runKey, signalWaitKey, stepPointerKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { runIndexKey } from "../../runtime/workflow/runs/run-index.js";

const Q = "workflow-steps";

describe("damageText", () => {
  it.each([
    [runKey(Q, "r-1"), 'run "r-1": its run record'],
    [stepPointerKey(Q, "r-1"), 'run "r-1": its step pointer'],
    [terminalRecordKey(Q, "r-1"), 'run "r-1": its end record'],
    [runIndexKey(Q, 1_700_000_000_000, "r-1"), 'run "r-1": its listing entry'],
    [signalWaitKey(Q, "order:7/paid"), 'the wait for signal "order:7/paid"'],
    [`workflow/groups/${Q}/0123456789abcdef0123/k-2`, 'member "k-2" of a run group: its record'],
    [`workflow/schedules/${Q}/nightly`, 'schedule "nightly": its record'],
  ])("names what %s belongs to, and what to do", (key, item) => {
    const text = damageText(key, "it holds -1");
    expect(text).toMatch(new RegExp(`^${item.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is damaged \\(it holds -1\\); `));
    expect(text).not.toContain("workflow/");
    expect(text).toMatch(key.includes("schedules") ? /taquba schedules remove/ : /restore the store from a backup/);
    if (item.startsWith("run ")) expect(text).toContain('taquba runs repair "r-1"');
  });

  it("a damaged signal wait, group member or child entry names the repair of the run it belongs to", () => {
    expect(damageText(signalWaitKey(Q, "k"), "d")).toMatch(/taquba runs repair on the run that waits for that signal/);
    expect(damageText(`workflow/groups/${Q}/0123456789abcdef0123/k-2`, "d")).toContain('taquba runs repair "g_0123456789abcdef0123_kk-2"');
    expect(damageText(`workflow/children/${Q}/p-1/c-1`, "d")).toMatch(
      /^a child run entry of run "p-1" \(child "c-1"\) is damaged \(d\); mend it with taquba runs repair "c-1" .* or taquba runs repair "p-1" /,
    );
  });

  it("a listing's damaged run is put in words from its fields alone", () => {
    expect(runDamageText("r-1", { record: "index_entry", detail: "its key is malformed" })).toMatch(
      /^run "r-1": its listing entry is damaged \(its key is malformed\); mend it with taquba runs repair "r-1" /,
    );
  });

  it("a group listing's damaged group is put in words from its fields alone", () => {
    expect(groupDamageText("g", { record: "member", detail: "it holds -1", memberKey: "k", runId: "g_x_kk" })).toMatch(
      /^group "g" could not be counted: member "k" of a run group: its record is damaged \(it holds -1\); mend it with taquba runs repair "g_x_kk" /,
    );
    expect(groupDamageText("g", { record: "member", detail: "d", memberKey: "k" })).toMatch(/its record is damaged \(d\); restore the store from a backup/);
    expect(groupDamageText("0123", { record: "index_entry", detail: "group index entry lacks its group id" })).toMatch(
      /^group "0123" could not be counted: its listing entry is damaged \(group index entry lacks its group id\); restore the store from a backup/,
    );
  });

  it.each([
    [runKey(Q, "a/b"), { kind: "run", runId: "a/b", record: "run_record" }],
    [runIndexKey(Q, 1, "r-1"), { kind: "run", runId: "r-1", record: "index_entry" }],
    [`workflow/children/${Q}/p-1/c-1`, { kind: "child_entry", parentRunId: "p-1", childRunId: "c-1" }],
    [`workflow/groups/${Q}/0123456789abcdef0123/k-2`, { kind: "group_member", memberKey: "k-2", runId: "g_0123456789abcdef0123_kk-2" }],
    [`workflow/runs/${Q}`, undefined],
    [`workflow/runs/${Q}/`, undefined],
    ["seg/0001", undefined],
  ])("the workflow layer says what %s names", (key, item) => {
    expect(damagedItemOf(key)).toEqual(item);
  });

  it("a listing's reason is rewritten where it quotes the error, and other text is left alone", () => {
    const err = new StoreCorruptedError(stepPointerKey(Q, "r-1"), "step pointer holds step -1, not a step index (a whole number from 0 up)");
    expect(withDamageText(`group "g" could not be counted: ${err.message}`)).toBe(
      `group "g" could not be counted: run "r-1": its step pointer is damaged (step pointer holds step -1, not a step index (a whole number from 0 up)); ${damageText(stepPointerKey(Q, "r-1"), "d")!.split("; ").slice(1).join("; ")}`,
    );
    for (const other of ["the owner did not answer", new StoreCorruptedError("segments/0001.seg", "bad checksum").message])
      expect(withDamageText(other)).toBe(other);
  });
});
