/**
 * @module The changed-keys map's keys that are no change: a key the state
 * did not hold when the map began, deleted again, is left out of the
 * changes a checkpoint orders and writes, whatever happened to it between;
 * a key the state held stays a tombstone; a compaction's carry merged with
 * the changes after its cut keeps a key that was held at either cut.
 */
import { describe, expect, it } from "vitest";
import { orderChanges } from "../../runtime/engine/change-order.js";
import { ChangedKeys, ChangedKeysSpares } from "../../runtime/engine/changed-keys.js";

const v = (n: number) => new Uint8Array([n]);
const notStopped = () => false;
const stopError = () => new Error("stopped");

async function ordered(map: ChangedKeys): Promise<[string, Uint8Array | null][]> {
  return [...(await orderChanges(map, notStopped, stopError))] as [string, Uint8Array | null][];
}

describe("changed keys that are no change", () => {
  it("leave out a key put and deleted again that the state did not hold, and keep a deleted key it held as a tombstone", async () => {
    const map = new ChangedKeys(1);
    map.set("j/new", v(1), true);
    map.set("j/held", v(2), false);
    map.set("j/new", null);
    map.set("j/held", null);
    // A delete of a key the state never held is no change either.
    map.set("j/absent", null, true);
    expect(map.size).toBe(3);
    expect(map.changes).toBe(1);
    expect(await ordered(map)).toEqual([["j/held", null]]);
  });

  it("judge a key by its first change only: later changes that find it absent or present do not move it", async () => {
    const map = new ChangedKeys(1);
    // Held when the map began: deleted, put again (finding it absent), deleted again: still a tombstone to write.
    map.set("a/held", null, false);
    map.set("a/held", v(1), true);
    map.set("a/held", null, false);
    // Absent when the map began: put, deleted, put again (finding it absent): its last value is a change.
    map.set("b/new", v(2), true);
    map.set("b/new", null, false);
    map.set("b/new", v(3), true);
    expect(map.changes).toBe(2);
    expect(await ordered(map)).toEqual([
      ["a/held", null],
      ["b/new", v(3)],
    ]);
    // Deleted once more: no change again.
    map.set("b/new", null, false);
    expect(map.changes).toBe(1);
    expect(await ordered(map)).toEqual([["a/held", null]]);
  });

  it("merge the changes after a compaction's cut into its carry so the run is exact over the state at either cut", async () => {
    const carry = new ChangedKeys(1);
    // Absent at the carry's start, put before the cut, deleted after it: absent at the first start, held at the second.
    carry.set("a/put-then-deleted", v(1), true);
    // Absent at the carry's start, put before the cut and left alone after it.
    carry.set("b/put", v(2), true);
    // Absent at both starts, put and deleted after the cut: no change over either.
    // Held at the carry's start, deleted before the cut, put and deleted again after it: a tombstone for the first start.
    carry.set("d/held", null, false);
    const later = new ChangedKeys(2);
    later.set("a/put-then-deleted", null, false);
    later.set("c/fresh", v(3), true);
    later.set("c/fresh", null, false);
    later.set("d/held", v(4), true);
    later.set("d/held", null, false);
    later.set("e/new", v(5), true);
    carry.mergeLater(later);
    expect(carry.changes).toBe(4);
    expect(await ordered(carry)).toEqual([
      ["a/put-then-deleted", null],
      ["b/put", v(2)],
      ["d/held", null],
      ["e/new", v(5)],
    ]);
  });

  it("mark keys given as bytes the same way as keys given as strings", async () => {
    const map = new ChangedKeys(1);
    const bytes = Buffer.from("j/1c/1n/q");
    map.setBytes(bytes, 0, 3, v(1), true);
    map.setBytes(bytes, 3, 3, v(1), true);
    map.setBytes(bytes, 6, 3, v(9), false);
    map.setBytes(bytes, 0, 3, null);
    map.setBytes(bytes, 3, 3, null);
    expect(map.changes).toBe(1);
    expect(await ordered(map)).toEqual([["n/q", v(9)]]);
  });

  it("start a map made from a retired one's arrays with no key marked as absent", async () => {
    const spares = new ChangedKeysSpares();
    const first = new ChangedKeys(1, { keys: 2000, keyBytes: 20_000 });
    for (let i = 0; i < 2000; i++) first.set(`k/${i}`, v(1), true);
    first.retire(spares);
    const taken = ChangedKeysSpares.taken;
    const second = new ChangedKeys(1, { keys: 2000, keyBytes: 20_000 }, spares);
    expect(ChangedKeysSpares.taken).toBe(taken + 1);
    for (let i = 0; i < 2000; i++) second.set(`k/${i}`, null);
    expect(second.changes).toBe(2000);
    expect((await ordered(second)).length).toBe(2000);
  });
});
