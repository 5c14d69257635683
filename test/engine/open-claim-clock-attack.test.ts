/**
 * @module An open that keeps losing its claim to a live writer's
 * checkpoints while the engine's clock jumps backwards (an operator or NTP
 * setting it back): the open's patience counts only the time that passed,
 * so it still gives up, with `StoreUnavailableError`, once the live writer
 * took its number for 30 s of the clock's forward steps and 8 claims,
 * instead of claiming on for as long as the jump was (an hour of lost claims
 * here). The owner loses nothing it acknowledged, and the open leaves no claim.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, MockClock, StoreUnavailableError, WriteBatch, type ObjectStore } from "taquba";
import { CLAIM_PATIENCE_MS } from "../../runtime/engine/open-claim.js";
import { manifestEpochs } from "../support/store-keys.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-open-claim-clock-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const FAST_RETRY = { retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 1 } } as const;
/** Claims the test lets the open lose before it calls the open hung: well past the 15 that 30 s of 2 s steps take. */
const HUNG_AFTER = 60;

class OpenHung extends Error {}

/** `inner` whose manifest puts first run `before` (a put-if-absent that finds its key taken then fails as a lost claim). */
function beforeManifestPuts(inner: ObjectStore, before: (key: string) => Promise<void>): ObjectStore {
  return {
    get: (k) => inner.get(k),
    put: async (k, body, opts) => {
      if (k.startsWith("manifest/")) await before(k);
      return inner.put(k, body, opts);
    },
    delete: (k) => inner.delete(k),
    list: (prefix, opts) => inner.list(prefix, opts),
  };
}

describe("an open losing every claim while its clock jumps backwards", () => {
  it.each([
    ["an hour back at the first claim", (claim: number) => (claim === 1 ? -3_600_000 : 2_000)],
    ["10 s back after every 6 s forward", (claim: number) => (claim % 2 === 0 ? -10_000 : 6_000)],
  ])("%s: gives up after 30 s of forward time and no fewer than 8 claims, leaving no claim and losing nothing", async (_name, step) => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const old = await Engine.open(store, MANUAL);
    await old.commit(new WriteBatch().put("a", enc("1")));
    await old.checkpoint();
    await old.commit(new WriteBatch().put("a2", enc("2")));
    const clock = new MockClock();
    let claims = 0;
    let forward = 0;
    let committed = 0;
    // Right before each claim lands, the owner publishes a checkpoint under that number, and the clock moves.
    const opener = beforeManifestPuts(store, async () => {
      claims++;
      if (claims > HUNG_AFTER) throw new OpenHung(`the open made ${claims} claims and did not give up`);
      await old.commit(new WriteBatch().put(`busy/${committed++}`, enc("x")));
      await old.checkpoint();
      const ms = step(claims);
      if (ms > 0) forward += ms;
      clock.set(clock.now() + ms);
    });
    const err = await Engine.open(opener, { ...MANUAL, ...FAST_RETRY, clock }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(OpenHung);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(
      /another writer published a manifest before each of this open's \d+ claims, for \d+ s; another process keeps checkpointing/,
    );
    expect(claims).toBeGreaterThanOrEqual(8);
    // It gave up at the first loss past the patience, counting only the forward steps.
    expect(forward).toBeGreaterThanOrEqual(CLAIM_PATIENCE_MS);
    if (claims > 8) expect(forward - Math.max(0, step(claims))).toBeLessThan(CLAIM_PATIENCE_MS);
    expect(await manifestEpochs(store)).toEqual(new Set([old.epoch]));
    await old.commit(new WriteBatch().put("after", enc("y")));
    await old.checkpoint();
    await old.close();
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    for (let i = 0; i < committed; i++) expect(dec(again.get(`busy/${i}`))).toBe("x");
    expect(dec(again.get("a"))).toBe("1");
    expect(dec(again.get("a2"))).toBe("2");
    expect(dec(again.get("after"))).toBe("y");
    await again.close();
  });
});

describe("an open whose lost claim's winner is collected before the open reads it", () => {
  it("rebases on the newest manifest by listing, claims after it, and the owner is fenced with every acknowledged commit kept", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const old = await Engine.open(store, MANUAL);
    await old.commit(new WriteBatch().put("a", enc("1")));
    await old.checkpoint();
    await old.commit(new WriteBatch().put("a2", enc("2")));
    let claims = 0;
    let committed = 0;
    // The first claim: the owner takes its number, then checkpoints past it until its collection deletes that manifest.
    const opener = beforeManifestPuts(store, async (k) => {
      if (++claims > 1) return;
      for (let i = 0; i < 5; i++) {
        await old.commit(new WriteBatch().put(`busy/${committed++}`, enc(String(i))));
        await old.checkpoint();
      }
      const got = await store.get(k);
      expect(got, "the manifest that took the claim's number was collected").toBeNull();
    });
    const engine = await Engine.open(opener, { ...MANUAL, ...FAST_RETRY, clock: new MockClock() });
    expect(claims).toBe(2);
    expect(engine.epoch).toBe(old.epoch + 1);
    // The owner's next commit meets the new writer's fence.
    await expect(old.commit(new WriteBatch().put("late", enc("x")))).rejects.toBeInstanceOf(FencedError);
    await old.close();
    for (let i = 0; i < committed; i++) expect(dec(engine.get(`busy/${i}`))).toBe(String(i));
    expect(dec(engine.get("a"))).toBe("1");
    expect(dec(engine.get("a2"))).toBe("2");
    expect(engine.get("late")).toBeUndefined();
    await engine.close();
  });
});
