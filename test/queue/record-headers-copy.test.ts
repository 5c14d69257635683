/**
 * @module The job record's own copy of an enqueue's headers: the string
 * names the enqueue checked, in their order, and nothing else. A
 * symbol-named property of the caller's object is not checked and cannot be
 * stored, so it is gone after a reopen; a job handed out straight from the
 * insert (`ackClaimingNext`) must not carry it either.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, SettlementEffects } from "taquba";
import type { ClaimNext } from "../../runtime/queue/types.js";
import { enc } from "./helpers.js";

const SECRET = Symbol("not a header");

function headersWithSymbol(): Record<string, string> {
  const h: Record<string | symbol, string> = { b: "2", a: "1", "10": "ten" };
  h[SECRET] = "kept out";
  return h as Record<string, string>;
}

const takeIt: ClaimNext = { index: 0, reserve: () => true };

describe("a job record's headers", () => {
  it("hold the enqueue's string-named headers in their order, not a symbol-named property, in a job claimed at its insert and after a reopen", async () => {
    const store = new MemoryStore();
    const q = await Queue.open(store, "q");
    await q.enqueue("steps", enc("first"));
    const first = (await q.claim("steps"))!;
    const source = headersWithSymbol();
    const res = await q.ackClaimingNext(first, new SettlementEffects().enqueue("steps", enc("second"), { headers: source }), takeIt);
    // The caller's object changed after the settlement changes nothing of the job's.
    source.a = "changed";
    const next = res.next!;
    expect(next).toBeDefined();
    expect(Object.getOwnPropertySymbols(next.headers)).toEqual([]);
    expect(Object.keys(next.headers)).toEqual(["10", "b", "a"]);
    expect(next.headers).toEqual({ b: "2", a: "1", "10": "ten" });
    await q.nack(next, "again", undefined, { countAttempt: false });
    await q.close();

    const reopened = await Queue.open(store, "q");
    const again = (await reopened.claim("steps"))!;
    expect(again.id).toBe(next.id);
    expect(Object.keys(again.headers)).toEqual(Object.keys(next.headers));
    expect(again.headers).toEqual(next.headers);
    await reopened.close();
  });
});
