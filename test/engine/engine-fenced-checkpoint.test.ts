/**
 * @module A fenced writer's checkpoint whose manifest put is held while the
 * new writer checkpoints and collects garbage: the new writer deletes the
 * manifest number the held put takes, so put-if-absent succeeds. The old
 * writer must still find it was fenced (a newer manifest is listed), fail
 * with `FencedError`, and take back what it wrote; what it cannot delete
 * the new writer's next garbage collection removes. An opening writer's
 * claim held the same way fails too (it opened over a stale state before).
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, S3Store, WriteBatch, type ObjectStore } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { GatedStore } from "../support/gated-store.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { keysUnder } from "../support/store-keys.js";

const tempDir = useTempDirs("taquba-fenced-checkpoint-");
const server = useS3Server();

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
/** Only explicit checkpoints, so the test decides when each manifest is published. */
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
/** Few, short retries: deletes refused on purpose fail fast. */
const SHORT_RETRY = { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 } as const;

/** The number of a `manifest/<20 digits>` key. */
const manifestNumber = (key: string) => Number(key.slice("manifest/".length));
/** The writer epoch of a `seg/<epoch>-<n>` key. */
const segmentEpoch = (key: string) => Number(key.slice("seg/".length, "seg/".length + 20));

interface Scenario {
  inner: ObjectStore;
  /** Which put of the checkpoint is held: its segment's (so the segment lands after the new writer's collection too) or its manifest's. */
  hold: "seg/" | "manifest/";
  /** Whether the fenced writer's deletes are refused (so only the new writer's garbage collection can remove its objects). */
  refuseOldDeletes: boolean;
  /** Whether the fenced writer's listing of manifests fails once the held put goes on (its publish cannot tell whether it was fenced). */
  failManifestListing?: boolean;
}

/**
 * Writer 1 publishes a manifest, commits more, and starts a checkpoint with
 * one put held. Writer 2 opens (taking the next manifest number), commits
 * and checkpoints until its garbage collection has deleted that number;
 * then the held put goes on. Returns what the test checks: the checkpoint's
 * outcome, the manifest key it takes and the segments it wrote.
 */
async function heldAcrossCollection({ inner, hold, refuseOldDeletes, failManifestListing = false }: Scenario) {
  const gated = new GatedStore(inner);
  let refusing = false;
  let listingFails = false;
  const oldStore = failWhen(gated, (call, key) => {
    if (refusing && call === "delete") return new Error(`delete of ${key} refused`);
    if (listingFails && call === "list" && key.startsWith("manifest/")) return new Error(`listing of ${key} refused`);
    return undefined;
  });
  const e1 = await Engine.open(oldStore, { ...MANUAL, retry: SHORT_RETRY });
  await e1.commit(new WriteBatch().put("a", enc("1")));
  await e1.checkpoint();
  await e1.commit(new WriteBatch().put("b", enc("old")));
  const heldKey = `manifest/${String(Math.max(...(await keysUnder(inner, "manifest/")).map(manifestNumber)) + 1).padStart(20, "0")}`;
  const segmentsBefore = new Set(await keysUnder(inner, "seg/"));

  gated.hold = (key) => key.startsWith(hold);
  const outcome = e1.checkpoint().then(
    () => "resolved" as const,
    (err: unknown) => err,
  );
  await gated.waitHeld(1);
  expect(gated.held).toHaveLength(1);

  const e2 = await Engine.open(inner, MANUAL);
  expect(e2.epoch).toBe(e1.epoch + 1);
  for (let i = 0; ; i++) {
    await e2.commit(new WriteBatch().put(`n${i}`, enc(String(i))));
    await e2.checkpoint();
    if (!(await keysUnder(inner, "manifest/")).includes(heldKey)) break;
    expect(i).toBeLessThan(10);
  }

  refusing = refuseOldDeletes;
  listingFails = failManifestListing;
  let written: string[] = [];
  if (hold === "seg/") {
    const key = gated.held[0]!.key;
    gated.release(key);
    written = [key];
    await gated.landed(key);
  } else {
    written = (await keysUnder(inner, "seg/")).filter((k) => !segmentsBefore.has(k) && segmentEpoch(k) === e1.epoch);
  }
  if (hold === "manifest/") gated.release(heldKey);
  const result = await outcome;
  listingFails = false;
  gated.hold = () => false;
  // The writer's next checkpoint, once its store answers again (what a writer whose publish was unsure does next).
  const next = failManifestListing
    ? await e1.checkpoint().then(
        () => "resolved" as const,
        (err: unknown) => err,
      )
    : undefined;
  await e1.close();
  return { e2, outcome: result, next, heldKey, written };
}

async function checkState(inner: ObjectStore) {
  const reopened = await Engine.open(inner, MANUAL);
  expect(dec(reopened.get("a"))).toBe("1");
  expect(reopened.has("b")).toBe(true);
  expect(reopened.has("n0")).toBe(true);
  await reopened.close();
}

const stores: [string, () => Promise<ObjectStore>][] = [
  ["LocalStore", async () => new LocalStore(await tempDir())],
  [
    "S3Store on s3rver",
    async () => new S3Store({ bucket: server.bucket, prefix: `fenced-${Math.random().toString(36).slice(2)}`, clientConfig: server.clientConfig }),
  ],
];

describe.each(stores)("a fenced writer's checkpoint held across the new writer's garbage collection (%s)", (_name, makeStore) => {
  it.each(["manifest/", "seg/"] as const)("held at its %s put: fails with FencedError and leaves neither its manifest nor its segments", async (hold) => {
    const inner = await makeStore();
    const { e2, outcome, heldKey, written } = await heldAcrossCollection({ inner, hold, refuseOldDeletes: false });
    expect(outcome).toBeInstanceOf(FencedError);
    expect(await keysUnder(inner, "manifest/")).not.toContain(heldKey);
    const segments = await keysUnder(inner, "seg/");
    for (const key of written) expect(segments).not.toContain(key);
    // The fenced writer's checkpoint changed nothing the new writer holds.
    expect(dec(e2.get("b"))).toBe("old");
    await e2.close();
    await checkState(inner);
  });

  it("fails with FencedError; what it could not delete, the new writer's next garbage collection removes", async () => {
    const inner = await makeStore();
    const { e2, outcome, heldKey, written } = await heldAcrossCollection({ inner, hold: "seg/", refuseOldDeletes: true });
    expect(outcome).toBeInstanceOf(FencedError);
    // Its deletes were refused: the manifest it re-created and its segment are still there.
    expect(await keysUnder(inner, "manifest/")).toContain(heldKey);
    expect(written).toHaveLength(1);
    expect(await keysUnder(inner, "seg/")).toContain(written[0]);

    await e2.commit(new WriteBatch().put("later", enc("x")));
    await e2.checkpoint();
    expect(await keysUnder(inner, "manifest/")).not.toContain(heldKey);
    expect(await keysUnder(inner, "seg/")).not.toContain(written[0]);
    await e2.close();
    await checkState(inner);
  });

  it("whose listing after the put fails: the checkpoint fails, the writer's next one fails with FencedError, and the new writer's collection removes what it left", async () => {
    const inner = await makeStore();
    const { e2, outcome, next, heldKey, written } = await heldAcrossCollection({ inner, hold: "seg/", refuseOldDeletes: false, failManifestListing: true });
    // The publish could not tell whether it was fenced: it fails (with the store's error), and never resolves.
    expect(outcome).toBeInstanceOf(Error);
    expect(outcome).not.toBe("resolved");
    // The next checkpoint meets the newer writer's manifests: fenced, never published over them.
    expect(next).toBeInstanceOf(FencedError);
    expect(dec(e2.get("b"))).toBe("old");

    await e2.commit(new WriteBatch().put("later", enc("x")));
    await e2.checkpoint();
    expect(await keysUnder(inner, "manifest/")).not.toContain(heldKey);
    for (const key of written) expect(await keysUnder(inner, "seg/")).not.toContain(key);
    await e2.close();
    await checkState(inner);
    const reopened = await Engine.open(inner, MANUAL);
    expect(dec(reopened.get("later"))).toBe("x");
    await reopened.close();
  });

  it("an opening writer whose claim is held across the same collection fails with FencedError and takes the claim back", async () => {
    const inner = await makeStore();
    const first = await Engine.open(inner, MANUAL);
    await first.commit(new WriteBatch().put("a", enc("1")));
    await first.close();
    const claimKey = `manifest/${String(Math.max(...(await keysUnder(inner, "manifest/")).map(manifestNumber)) + 1).padStart(20, "0")}`;

    const gated = new GatedStore(inner, (key) => key === claimKey);
    const late = Engine.open(gated, MANUAL).then(
      (e) => e,
      (err: unknown) => err,
    );
    await gated.waitHeld(1);
    // Another writer opens meanwhile, takes the same number and checkpoints until it deleted it.
    const e2 = await Engine.open(inner, MANUAL);
    for (let i = 0; ; i++) {
      await e2.commit(new WriteBatch().put(`n${i}`, enc(String(i))));
      await e2.checkpoint();
      if (!(await keysUnder(inner, "manifest/")).includes(claimKey)) break;
      expect(i).toBeLessThan(10);
    }
    gated.release(claimKey);
    const outcome = await late;
    if (outcome instanceof Engine) await outcome.close();
    expect(outcome).toBeInstanceOf(FencedError);
    expect(await keysUnder(inner, "manifest/")).not.toContain(claimKey);
    await e2.commit(new WriteBatch().put("after", enc("y")));
    await e2.close();
    const reopened = await Engine.open(inner, MANUAL);
    expect(reopened.has("after")).toBe(true);
    expect(reopened.has("n0")).toBe(true);
    await reopened.close();
  });
});
