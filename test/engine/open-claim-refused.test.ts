/**
 * @module An open whose store refuses its writes with `FencedError` (an
 * owner's lease guard once the term lost its lease or ended) stops at its
 * first refused claim with the store's own reason. Its claim used to take
 * the refusal for a checkpoint that took the number, claimed again and
 * again for the whole claim patience (30 s by the engine's clock) and then
 * gave up blaming another writer's checkpoints ("another writer published a
 * manifest before each of this open's n claims"), while no manifest was
 * published at all: the expected failure of the cluster's shard open over
 * S3 at load 50, where a term lost its lease while opening.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, MemoryStore, MockClock, Queue, WriteBatch, type PutOptions } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { startedTerm } from "../support/owner-election.js";
import { keysUnder } from "../support/store-keys.js";

/** Refuses every manifest put (or those of `prefixes`) as a lease guard would once `refusing` is set; counts the refused ones. */
class RefusingClaims extends ForwardingStore {
  refusing = false;
  refused = 0;
  /** The folders whose puts are refused. */
  prefixes: readonly string[] = ["manifest/"];
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (this.refusing && this.prefixes.some((p) => key.startsWith(p))) {
      this.refused++;
      throw new FencedError(`the owner lease ran out before the write of "${key}"`);
    }
    return this.inner.put(key, body, opts);
  }
}

/** A clock five seconds further on at each read: an open that kept claiming would pass its patience within a few claims. */
class RushingClock extends MockClock {
  override now(): number {
    this.advance(5_000);
    return super.now();
  }
}

describe("an open whose store refuses its writes", () => {
  it("stops at its first refused claim with the store's reason, publishing nothing", async () => {
    const inner = new MemoryStore();
    const old = await Engine.open(inner, { checkpointWalObjects: 0 });
    await old.commit(new WriteBatch().put("a", new Uint8Array([1])));
    await old.checkpoint();
    await old.close();
    const manifestsBefore: string[] = [];
    for await (const o of inner.list("manifest/")) manifestsBefore.push(o.key);

    const store = new RefusingClaims(inner);
    store.refusing = true;
    const open = Engine.open(store, { clock: new RushingClock() });
    await expect(open).rejects.toBeInstanceOf(FencedError);
    await expect(open).rejects.toThrow(/the owner lease ran out before the write of "manifest\//);
    expect(store.refused, "claims refused before the open gave up").toBe(1);
    const manifestsAfter: string[] = [];
    for await (const o of inner.list("manifest/")) manifestsAfter.push(o.key);
    expect(manifestsAfter).toEqual(manifestsBefore);
  });

  it("says the store refused its write because this process's lease was lost, not that a newer writer opened, keeping the store's error as its cause", async () => {
    const inner = new MemoryStore();
    await (await Engine.open(inner)).close();
    const store = new RefusingClaims(inner);
    store.refusing = true;
    const err = await Engine.open(store, { clock: new RushingClock() }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(FencedError);
    const message = (err as FencedError).message;
    expect(message).toMatch(/^the store given to this open refused its write \(the owner lease ran out before the write of "manifest\/\d+"\)/);
    expect(message).toMatch(/the lease or ownership this process held on the store was lost or ended, and another process may own the store now/);
    expect(message).toMatch(/open it again only once this process holds the store/);
    expect(message).not.toMatch(/newer writer/);
    expect((err as FencedError).cause).toBeInstanceOf(FencedError);
    expect(((err as FencedError).cause as FencedError).detail).toBe((err as FencedError).detail);
  });

  for (const [what, refused] of [
    ["its first write (the store's capability check)", "probe/"],
    ["the fence it plants at the end of the log", "wal/"],
  ] as const) {
    it(`says the same when the store refuses ${what}`, async () => {
      const inner = new MemoryStore();
      await (await Engine.open(inner)).close();
      const manifestsBefore = await keysUnder(inner, "manifest/");
      const store = new RefusingClaims(inner);
      store.refusing = true;
      store.prefixes = [refused];
      const err = await Engine.open(store, { clock: new RushingClock() }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FencedError);
      expect((err as Error).message).toMatch(
        new RegExp(`^the store given to this open refused its write \\(the owner lease ran out before the write of "${refused}`),
      );
      expect((err as Error).message).not.toMatch(/newer writer/);
      if (refused === "probe/") expect(await keysUnder(inner, "manifest/")).toEqual(manifestsBefore);
    });
  }

  it("a queue opened through an owner term's guard, the term ending before its claim, fails at the claim with FencedError", async () => {
    const inner = new MemoryStore();
    const first = await Queue.open(inner, "app");
    await first.enqueue("q", new Uint8Array([1]), { jobId: "kept" });
    await first.close();
    const { election, term } = await startedTerm(inner);
    const guarded = term.guard(inner);
    // The term ends (its lease released) while its Queue.open runs, just before the open's claim: every claim is refused.
    const claims: string[] = [];
    const watching = new (class extends ForwardingStore {
      override async put(key: string, body: Uint8Array, opts?: PutOptions) {
        if (key.includes("/manifest/")) {
          claims.push(key);
          if (claims.length === 1) await election.stop();
        }
        return super.put(key, body, opts);
      }
    })(guarded);
    const open = Queue.open(watching, "app", { clock: new RushingClock() });
    await expect(open).rejects.toBeInstanceOf(FencedError);
    await expect(open).rejects.toThrow(/the owner term of app\/lease\/ ended/);
    await expect(open).rejects.toThrow(/^the store given to this open refused its write/);
    expect(claims).toHaveLength(1);
    const reopened = await Queue.open(inner, "app");
    expect(await reopened.view().job("kept")).not.toBeNull();
    await reopened.close();
  });
});
