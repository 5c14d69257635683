/**
 * @module Two opens racing for the same manifest number from the same base
 * at the same millisecond. Their claims differ only by who made them, so
 * each must carry something of its own: identical bytes made the loser
 * take the winner's landed put for its own retried one (create-if-absent
 * counts its own bytes found there as created), and both opened as the
 * writer of one epoch, each fencing the log with the same identical
 * marker. Driven by order with a held put over a real directory, and with
 * one clock for both opens so that their times are equal.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, MockClock, StoreCorruptedError, WriteBatch, type PutOptions } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest, emptyManifest, encodeManifest } from "../../runtime/engine/manifest.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { keysUnder } from "../support/store-keys.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-claim-race-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

/** Every manifest put waits at `gate` before it is made. */
class GatedManifestPuts extends ForwardingStore {
  constructor(
    inner: LocalStore,
    readonly gate: () => Promise<void>,
  ) {
    super(inner);
  }

  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (key.startsWith("manifest/")) await this.gate();
    return this.inner.put(key, body, opts);
  }
}

/** A gate that opens once `n` callers wait at it. */
function meeting(n: number): () => Promise<void> {
  let waiting = 0;
  let open = () => {};
  const opened = new Promise<void>((r) => (open = r));
  return async () => {
    if (++waiting >= n) open();
    await opened;
  };
}

describe("two opens claiming the same number at the same millisecond", () => {
  it("one opens and the other is fenced; the store holds one claim, and the winner's commits survive a reopen", async () => {
    const dir = await tempDir();
    const first = await Engine.open(new LocalStore(dir), MANUAL);
    await first.commit(new WriteBatch().put("a", enc("1")));
    await first.checkpoint();
    await first.close();
    const before = await keysUnder(new LocalStore(dir), "manifest/");

    // Both load the same base, then both claims are put at once, made at the same time.
    const clock = new MockClock();
    const gate = meeting(2);
    const outcomes = await Promise.allSettled([
      Engine.open(new GatedManifestPuts(new LocalStore(dir), gate), { ...MANUAL, clock }),
      Engine.open(new GatedManifestPuts(new LocalStore(dir), gate), { ...MANUAL, clock }),
    ]);
    const opened = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    const refused = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as unknown] : []));
    for (const e of opened) await e.close().catch(() => {});
    expect(opened).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(FencedError);

    const store = new LocalStore(dir);
    const claims = (await keysUnder(store, "manifest/")).filter((k) => !before.includes(k));
    expect(claims).toHaveLength(1);
    const claim = decodeManifest(claims[0]!, (await store.get(claims[0]!))!.body, parseNumberedKey("", "manifest", claims[0]!)!);
    expect(claim.epoch).toBe(opened[0]!.epoch);
    const again = await Engine.open(store, MANUAL);
    expect(dec(again.get("a"))).toBe("1");
    expect(again.epoch).toBe(claim.epoch + 1);
    await again.close();
  });

  it("a claim's id reads back as written, and a manifest whose id is no string is refused as corrupted", () => {
    const claim = { ...emptyManifest(), id: 3, epoch: 2, opener: "c2VlZC1vcGVuZXI" };
    expect(decodeManifest("manifest/3", encodeManifest(claim), 3).opener).toBe("c2VlZC1vcGVuZXI");
    expect(decodeManifest("manifest/3", encodeManifest({ ...claim, opener: undefined }), 3).opener).toBeUndefined();
    const bad = encodeManifest({ ...claim, opener: 7 as unknown as string });
    expect(() => decodeManifest("manifest/3", bad, 3)).toThrow(StoreCorruptedError);
    expect(() => decodeManifest("manifest/3", bad, 3)).toThrow(/manifest fields are missing or malformed/);
  });
});
