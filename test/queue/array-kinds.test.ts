/**
 * @module The lists a settlement hands through the queue (its prepared
 * enqueues, its outcomes) are of one V8 elements kind, objects and packed,
 * for every kind of settlement and once the code is optimized: an empty
 * literal makes a list of small integers and V8's optimized `map` a holey
 * one, and each kind is another class to the functions reading the lists
 * (a deoptimization of each when it first meets one). Also the empty lists
 * `array-kinds` makes, for objects and for times, those it makes with room
 * for a few (empty, and filled past their room), its room of holes, and a new SettlementEffects'
 * lists. Run in a child process
 * that turns on V8's natives syntax to read the kinds.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startScript } from "../support/child-script.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/settlement-array-kinds.ts", import.meta.url));

describe("the elements kinds of a settlement's lists", () => {
  it(
    "are objects, packed, at the transaction and the announcement, for settlements with no effects, no enqueues, one, two, a chained claim and a nack",
    async () => {
      const child = startScript(FIXTURE, ["1800"]);
      const exit = await child.exited;
      expect(exit, child.stderr()).toEqual({ code: 0, signal: null });
      const report = JSON.parse(child.lines.at(-1)!) as {
        kinds: Record<string, Record<string, number>>;
        empties: Record<string, string>;
        holes: { kind: string; length: number; holes: boolean }[];
        pushed: string;
        times: string;
        rooms: Record<string, { empty: string; length: number; filled: string; held: number[] }>;
        effectLists: { kvOps: string; enqueues: string; lengths: number[] };
      };
      const sites = ["prepared at the transaction", "prepared at the announcement", "outcomes at the announcement"];
      expect(Object.keys(report.kinds).sort()).toEqual([...sites].sort());
      for (const site of sites) {
        expect(Object.keys(report.kinds[site]!), site).toEqual(["objects, packed"]);
        // Every settlement was seen: 1,800 rounds of one to three settlements and a batch enqueue.
        expect(report.kinds[site]!["objects, packed"]!, site).toBeGreaterThan(1800);
      }
      expect(report.empties).toEqual({ objects: "objects, packed", doubles: "doubles, packed" });
      // Room made at once (a memtable's changed keys' values): holes only, objects' kind before any store.
      expect(report.holes).toEqual([0, 1, 1024].map((length) => ({ kind: "objects, holey", length, holes: true })));
      expect(report.pushed).toBe("objects, packed");
      expect(report.times).toBe("doubles, packed");
      // Lists made with room for one, two or three elements: empty, and still objects and packed past their room.
      for (const n of [1, 2, 3]) {
        expect(report.rooms[n], `room for ${n}`).toEqual({
          empty: "objects, packed",
          length: 0,
          filled: "objects, packed",
          held: Array.from({ length: n + 2 }, (_, i) => i),
        });
      }
      // A new SettlementEffects' lists are made with room, empty, of the kind the queue's readers see.
      expect(report.effectLists).toEqual({ kvOps: "objects, packed", enqueues: "objects, packed", lengths: [0, 0] });
    },
    HEAVY_TEST_MS,
  );
});
