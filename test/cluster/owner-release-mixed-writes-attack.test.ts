/**
 * @module A graceful end of an owner term with several of its guarded
 * writes in flight at once: one held by a slow store, one that throws in
 * the store's own call, one that rejects, one that lands at once. The
 * lease is released only once the slowest settled (the failures count as
 * settled and hold nothing up); until then the next owner does not own the
 * store, and its write of the slow key is the one that stays. A write the
 * ended term sends after its end is refused and lands nowhere.
 */
import { describe, expect, it } from "vitest";
import { FencedError, MemoryStore, MockClock, type ObjectStore, type PutOptions } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { GatedStore } from "../support/gated-store.js";
import { guardedOwner as owner, RENEW } from "../support/owner-election.js";
import { until } from "../support/until.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** `inner` whose put of one key throws in the call and of another rejects. */
class FailingPuts extends ForwardingStore {
  override put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (key === "app/inbox/throws") throw new Error("the store's call threw");
    if (key === "app/inbox/rejects") return Promise.reject(new Error("the store's put failed"));
    return super.put(key, body, opts);
  }
}

async function leaseReleased(store: ObjectStore): Promise<boolean> {
  for await (const o of store.list("app/lease/")) if (/"released":true/.test(text((await store.get(o.key))!.body))) return true;
  return false;
}

describe("an owner term ended gracefully with writes in flight that settle each their own way", () => {
  it("releases the lease once the slowest settled, failures holding nothing up; the next owner's write stays", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const shared = new MemoryStore();
    const gated = new GatedStore(shared, (key) => key === "app/inbox/slow");
    // The failing store outermost: its throw comes in the guard's own call to it.
    const a = owner(new FailingPuts(gated), clock, "a");
    await until("a owns the store", () => a.election.state === "owner" && a.guarded() !== undefined, 20_000);
    const guard = a.guarded()!;
    const slow = guard.put("app/inbox/slow", bytes("a, late"));
    await gated.waitHeld(1);
    const failures = [guard.put("app/inbox/throws", bytes("a")), guard.put("app/inbox/rejects", bytes("a"))].map((p) =>
      p.then(
        () => "stored",
        (e: unknown) => (e as Error).message,
      ),
    );
    await guard.put("app/inbox/fast", bytes("a"));
    expect(await Promise.all(failures)).toEqual(["the store's call threw", "the store's put failed"]);

    const b = owner(shared, clock, "b");
    const stopped = a.election.stop();
    for (let i = 0; i < 5; i++) {
      clock.advance(RENEW / 4);
      await new Promise<void>((r) => setTimeout(r, 5));
    }
    // The slow write can still land: no release, and b does not own the store.
    expect(await leaseReleased(shared)).toBe(false);
    expect(b.election.state).not.toBe("owner");
    // Sent after the term's work stopped: refused, never stored.
    await expect(guard.put("app/inbox/after-end", bytes("a"))).rejects.toBeInstanceOf(FencedError);

    gated.release("app/inbox/slow");
    await slow;
    await stopped;
    expect(await leaseReleased(shared)).toBe(true);
    clock.advance(RENEW);
    await until("b owns the store", () => b.election.state === "owner" && b.guarded() !== undefined, 20_000);
    await b.guarded()!.put("app/inbox/slow", bytes("b"));
    expect(text((await shared.get("app/inbox/slow"))!.body)).toBe("b");
    expect(await shared.get("app/inbox/after-end")).toBeNull();
    expect(text((await shared.get("app/inbox/fast"))!.body)).toBe("a");
    await b.election.stop();
  });
});
