/**
 * @module MemoryStore: the store conformance suite, plus listings that stay ordered
 * while keys change under them.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "taquba";
import { describeStoreConformance } from "./conformance.js";

describeStoreConformance("MemoryStore", { makeStore: () => new MemoryStore(), paginationKeys: 1100, readsInto: true });

describe("MemoryStore", () => {
  it("keeps listing in order while keys are deleted and added during the listing", async () => {
    const store = new MemoryStore();
    for (const k of ["p/1", "p/2", "p/3", "p/5", "q"]) await store.put(k, new Uint8Array(1));
    const seen: string[] = [];
    for await (const o of store.list("p/")) {
      seen.push(o.key);
      if (o.key === "p/1") {
        await store.delete("p/2"); // not yet reached: skipped
        await store.put("p/4", new Uint8Array(1)); // ahead: seen
        await store.put("p/0", new Uint8Array(1)); // behind: not seen
      }
    }
    expect(seen).toEqual(["p/1", "p/3", "p/4", "p/5"]);
    expect(store.size).toBe(6);
  });
});
