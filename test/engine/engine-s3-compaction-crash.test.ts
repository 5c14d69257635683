/**
 * @module SIGKILL during a compaction over the S3 protocol: a child writer
 * fills a store on s3rver (loopback) while checkpoints and compactions run,
 * and is killed part way through a compaction's segment puts (two stores,
 * three kills each, the choices drawn from the test's seed). After most kills
 * the store holds segments no manifest lists yet (the cut checkpoint's); a reopen must not be blocked by them and
 * must hold every commit the writer reported durable, no half batch and no
 * deleted key back.
 */
import { durableIds } from "../support/crash-output.js";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { S3Store, type ObjectStore } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useS3Server } from "../support/use-s3-server.js";
import { testRandom } from "../support/seed.js";
import { expectReopenedCrashState } from "../support/crash-state.js";

const fixture = fileURLToPath(new URL("./fixtures/compaction-crash-writer.ts", import.meta.url));
/**
 * Fresh stores filled, each killed `ROUNDS` times (the test's seed, printed on failure, replays the choices).
 * Each store repeats the same case (a kill on a fresh store, then two on a store a kill left) with
 * other draws: a third one made this the heaviest test file in CI for no case the two do not cover.
 */
const FILLS = 2;
const ROUNDS = 3;

const s3 = useS3Server();

/** Segment puts begun since the last compaction completed, from the writer's `S` and `C` lines. */
function putsSinceCompaction(lines: readonly string[]): { puts: number; compactions: number } {
  let puts = 0;
  let atLast = 0;
  let compactions = 0;
  for (const l of lines) {
    if (l.startsWith("S ")) puts = Number(l.slice(2));
    else if (l.startsWith("C ")) {
      compactions = Number(l.slice(2));
      atLast = puts;
    }
  }
  return { puts: puts - atLast, compactions };
}

/** Segments in the store that the newest manifest does not list. */
async function unlistedSegments(store: ObjectStore): Promise<number> {
  let newest: { key: string; id: number } | undefined;
  for await (const o of store.list("manifest/")) {
    const id = parseNumberedKey("", "manifest", o.key);
    if (id !== undefined && (newest === undefined || id > newest.id)) newest = { key: o.key, id };
  }
  const listed = new Set<string>();
  if (newest !== undefined) {
    const got = await store.get(newest.key);
    for (const s of decodeManifest(newest.key, got!.body, newest.id).segments) listed.add(s.name);
  }
  let unlisted = 0;
  for await (const o of store.list("seg/")) if (!listed.has(o.key)) unlisted++;
  return unlisted;
}

describe("SIGKILL during a compaction over S3 (s3rver)", () => {
  it("reopens past the cut compaction's segments with every durable commit", { timeout: loadLimitTimeout(300_000) }, () =>
    withinLoadLimit(300_000, async () => {
      const r = testRandom("compaction crash over S3");
      const env = { ...process.env, AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1" };
      let cutMidCheckpoint = 0;
      let durableTotal = 0;
      for (let fill = 0; fill < FILLS; fill++) {
        const prefix = `compaction-crash-${r.seed}-${fill}`;
        const url = `s3://${s3.bucket}/${prefix}?endpoint=${encodeURIComponent(s3.endpoint)}&forcePathStyle=true`;
        const store = new S3Store({ bucket: s3.bucket, prefix, clientConfig: s3.clientConfig });
        const allDurable: string[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const tag = `f${fill}r${round}`;
          const target = 40 + r.int(300);
          const into = 4 + r.int(20);
          const writer = startScript(fixture, [url, tag, "4"], { env: r.childEnv(env) });
          // Past `target` durable batches and `into` segment puts into a checkpoint after the last compaction
          // ended: most of those puts are a compaction's (it rewrites the state; an incremental one writes a few).
          await writer.waitFor((lines) => durableIds(lines).length >= target && putsSinceCompaction(lines).puts >= into);
          await writer.kill();
          expect(backgroundFailures(writer)).toEqual([]);
          const durable = durableIds(writer.lines);
          allDurable.push(...durable);
          durableTotal += durable.length;
          if ((await unlistedSegments(store)) > 0) cutMidCheckpoint++;
          await expectReopenedCrashState(store, allDurable, tag);
        }
      }
      expect(durableTotal).toBeGreaterThan(FILLS * ROUNDS * 40);
      // The kills landed while a checkpoint's segments were being put, in most rounds at least.
      expect(cutMidCheckpoint, "rounds killed with a checkpoint's segments unlisted").toBeGreaterThan((FILLS * ROUNDS) / 2);
    }),
  );
});
