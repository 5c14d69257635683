/**
 * @module A term that ended gracefully writes nothing more: once its work
 * stopped and its lease is released (the election stopped, or the lease
 * handed back as a shard worker does), the term's guarded store refuses
 * every write with `FencedError`, though the lease's deadline is still
 * ahead by the old owner's clock. A second owner, with a store of its own
 * over the same directory or bucket, takes the lease over and writes; the
 * old owner's late writes must not land beside its own. The clock is a
 * MockClock: it moves only where the test moves it, so the old lease's
 * deadline cannot pass while the stores answer.
 */
import { describe, expect, it } from "vitest";
import { FencedError, LocalStore, MockClock, S3Store, type ObjectStore } from "taquba";
import type { OwnerElection } from "../../runtime/cluster/owner-election.js";
import { guardedOwner as owner, LEASE, RENEW } from "../support/owner-election.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

const tempDir = useTempDirs("taquba-release-guard-");
const s3 = useS3Server();
let buckets = 0;

const KINDS: Array<[string, () => Promise<() => ObjectStore>]> = [
  [
    "LocalStore",
    async () => {
      const dir = await tempDir();
      return () => new LocalStore(dir);
    },
  ],
  [
    "S3 (s3rver)",
    async () => {
      const prefix = `release-guard-${++buckets}`;
      return () => new S3Store({ bucket: s3.bucket, prefix, clientConfig: s3.clientConfig });
    },
  ],
];

const ENDINGS: Array<[string, (e: OwnerElection) => Promise<void>]> = [
  ["the election stopped", (e) => e.stop()],
  [
    "the lease handed back (as a shard worker does)",
    async (e) => {
      e.relinquish();
      await until("the old owner stood by after releasing", () => e.state === "standby");
    },
  ],
];

/** A store counting its answered reads of lease objects: a standby has looked at the lease once one came back. */
class LeaseLooks extends ForwardingStore {
  looks = 0;
  override async get(key: string) {
    const got = await super.get(key);
    if (key.startsWith("app/lease/")) this.looks++;
    return got;
  }
}

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe.each(KINDS)("over %s, a term that released its lease writes nothing more", (_kind, open) => {
  it.each(ENDINGS)("when %s, though the lease's deadline is still ahead", async (_ending, end) => {
    const storeOf = await open();
    const clock = new MockClock(1_700_000_000_000);
    const start = clock.now();
    const a = owner(storeOf(), clock, "a");
    await until("a owns the store", () => a.election.state === "owner" && a.guarded() !== undefined, 20_000);
    const oldGuard = a.guarded()!;
    await oldGuard.put("app/inbox/answers/1", bytes("a"));

    const bStore = new LeaseLooks(storeOf());
    const b = owner(bStore, clock, "b");
    // Its first look done, the standby's next one is due a renewal interval from now by the clock.
    await until("b looked at the lease", () => bStore.looks > 0, 20_000);
    await end(a.election);
    // Released, before the new owner claimed: already refused.
    await expect(oldGuard.put("app/inbox/answers/2", bytes("a, released"))).rejects.toBeInstanceOf(FencedError);
    await expect(oldGuard.delete("app/inbox/answers/1")).rejects.toBeInstanceOf(FencedError);

    // The standby's next look finds the release and claims at once.
    clock.advance(RENEW);
    await until("b owns the store", () => b.election.state === "owner" && b.guarded() !== undefined, 20_000);
    // The old term's lease has not run out by the clock: only its end refuses what follows.
    expect(clock.now() - start).toBeLessThan(LEASE);
    await b.guarded()!.put("app/inbox/answers/2", bytes("b"));
    await expect(oldGuard.put("app/inbox/answers/2", bytes("a, late"))).rejects.toBeInstanceOf(FencedError);
    await expect(oldGuard.put("app/inbox/answers/3", bytes("a, late"))).rejects.toThrow(/ended .*before the write of "app\/inbox\/answers\/3"/);

    const reader = storeOf();
    expect(text((await reader.get("app/inbox/answers/2"))!.body)).toBe("b");
    expect(await reader.get("app/inbox/answers/3")).toBeNull();
    expect(text((await reader.get("app/inbox/answers/1"))!.body)).toBe("a");
    // Reads of the old term still pass through.
    expect(text((await oldGuard.get("app/inbox/answers/2"))!.body)).toBe("b");
    await Promise.all([a.election.stop(), b.election.stop()]);
  });
});
