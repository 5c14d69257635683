/**
 * @module A child's lines read on: each reader hands every line once, in
 * order, including lines printed between its looks, and readers of the
 * same lines keep their own places.
 */
import { describe, expect, it } from "vitest";
import { LinesReadOn } from "./lines-read-on.js";

describe("LinesReadOn", () => {
  it("hands each line once, in order, as the lines grow between looks", () => {
    const lines: string[] = ["ready"];
    const reader = new LinesReadOn(lines);
    const seen: string[][] = [];
    const look = () => {
      const got: string[] = [];
      reader.readOn((l) => got.push(l));
      seen.push(got);
    };
    look();
    look();
    lines.push("owner 1", "write 2 put k");
    look();
    lines.push("standby 3");
    look();
    expect(seen).toEqual([["ready"], [], ["owner 1", "write 2 put k"], ["standby 3"]]);
  });

  it("keeps one place per reader: a reader made later reads from the first line", () => {
    const lines = ["a", "b"];
    const first = new LinesReadOn(lines);
    first.readOn(() => {});
    lines.push("c");
    const later = new LinesReadOn(lines);
    const byFirst: string[] = [];
    const byLater: string[] = [];
    first.readOn((l) => byFirst.push(l));
    later.readOn((l) => byLater.push(l));
    expect(byFirst).toEqual(["c"]);
    expect(byLater).toEqual(["a", "b", "c"]);
  });
});
