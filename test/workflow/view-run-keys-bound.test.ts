/**
 * @module The view's run keys (view-run-keys.ts) against a model of the
 * bound: 512 and 513 runs, runs read again in between, and run ids that
 * are `Object.prototype`'s names, empty, or hold U+FFFF and astral
 * characters: each answer holds the keys the record helpers build, and no
 * more than the bound's runs are kept.
 */
import { describe, expect, it } from "vitest";
import { VIEW_RUN_KEYS_KEPT, ViewRunKeys } from "../../runtime/workflow/runs/view-run-keys.js";
import { runKey, stepPointerKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { testRandom } from "../support/seed.js";

const ODD_IDS = ["__proto__", "constructor", "toString", "hasOwnProperty", "", "\uFFFF", "\u{1F600}", "a\u0000b"];

describe("a view's run keys at their bound", () => {
  it("keeps 512 runs, drops the oldest at the 513th, and answers each run's keys as a model does", () => {
    expect(VIEW_RUN_KEYS_KEPT).toBe(512);
    const keys = new ViewRunKeys("steps");
    const first = keys.of("run-0");
    for (let i = 1; i < 512; i++) keys.of(`run-${i}`);
    expect(keys.size).toBe(512);
    // The 512th run still finds the first kept.
    expect(keys.of("run-0")).toBe(first);
    keys.of("run-512");
    expect(keys.size).toBe(512);
    // The first was the oldest asked for first (a read again does not make it young): made anew.
    const again = keys.of("run-0");
    expect(again).not.toBe(first);
    expect([again.run, again.pointer, again.terminal]).toEqual([first.run, first.pointer, first.terminal]);
    expect(keys.size).toBe(512);
  });

  it("answers random reads of many runs, odd ids among them, within the bound", () => {
    const r = testRandom("view run keys bound");
    const keys = new ViewRunKeys("steps");
    // The model: the runs kept, oldest made first.
    const kept: string[] = [];
    for (let op = 0; op < 20_000; op++) {
      const id = r.int(10) === 0 ? ODD_IDS[r.int(ODD_IDS.length)]! : `run-${r.int(700)}`;
      const k = keys.of(id);
      expect([k.run, k.pointer, k.terminal], id).toEqual([runKey("steps", id), stepPointerKey("steps", id), terminalRecordKey("steps", id)]);
      if (!kept.includes(id)) {
        if (kept.length === VIEW_RUN_KEYS_KEPT) kept.shift();
        kept.push(id);
      }
      expect(keys.size).toBe(kept.length);
    }
    expect(keys.size).toBe(VIEW_RUN_KEYS_KEPT);
  });
});
