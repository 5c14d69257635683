/**
 * @module A graceful end of an owner term while one of its guarded writes
 * is still in flight: the guard passed it when it was sent, and the term's
 * work stopped without waiting for it (a fire-and-forget answer, say). The
 * lease must not be handed back while that write can still land: otherwise
 * the next owner claims at once, writes the same key, and the old term's
 * write lands over it. The release waits for the term's writes in flight
 * (within the lease's deadline); then the next owner's write is the one
 * that stays.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { guardedOwner as owner, LEASE, RENEW } from "../support/owner-election.js";
import { until } from "../support/until.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("an owner term ended gracefully while its guarded write is in flight", () => {
  it("the lease is released only once the write settled: the next owner's write of the key is the one that stays", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const shared = new MemoryStore();
    const gated = new GatedStore(shared, (key) => key === "app/inbox/answers/1");
    const a = owner(gated, clock, "a");
    await until("a owns the store", () => a.election.state === "owner" && a.guarded() !== undefined, 20_000);
    // Sent while a owns the store: the guard passes it, the store holds it.
    const straggler = a.guarded()!.put("app/inbox/answers/1", bytes("a, in flight"));
    await gated.waitHeld(1);

    const b = owner(shared, clock, "b");
    const stopped = a.election.stop();
    // While a's write is held, b must not come to own the store, however often it looks.
    for (let i = 0; i < 5; i++) {
      clock.advance(RENEW / 4);
      await new Promise<void>((r) => setTimeout(r, 5));
    }
    expect(b.election.state).not.toBe("owner");
    gated.release("app/inbox/answers/1");
    await straggler;
    await stopped;
    clock.advance(RENEW);
    await until("b owns the store", () => b.election.state === "owner" && b.guarded() !== undefined, 20_000);
    await b.guarded()!.put("app/inbox/answers/1", bytes("b"));
    expect(text((await shared.get("app/inbox/answers/1"))!.body)).toBe("b");
    await b.election.stop();
  });

  it("a write still in flight at the lease's deadline: the lease is left to run out, never released under it", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const shared = new MemoryStore();
    const gated = new GatedStore(shared, (key) => key === "app/inbox/answers/1");
    const a = owner(gated, clock, "a");
    await until("a owns the store", () => a.election.state === "owner" && a.guarded() !== undefined, 20_000);
    const straggler = a.guarded()!.put("app/inbox/answers/1", bytes("a, in flight"));
    await gated.waitHeld(1);
    const stopped = a.election.stop();
    clock.advance(LEASE * 2);
    // The term ends without waiting for the held write past its deadline.
    await stopped;
    const leases: string[] = [];
    for await (const o of shared.list("app/lease/")) leases.push(o.key);
    for (const key of leases) expect(text((await shared.get(key))!.body)).not.toMatch(/"released":true/);
    gated.release("app/inbox/answers/1");
    await straggler.catch(() => undefined);
  });
});
