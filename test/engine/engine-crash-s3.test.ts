/**
 * @module Engine crash recovery (fixtures/crash-writer-rounds.ts) over S3
 * (s3rver on loopback), killed among overlapping and folding checkpoints.
 */
import { describe, expect, it } from "vitest";
import { S3Store } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { startS3Server } from "../support/s3-server.js";
import { crashRounds } from "./fixtures/crash-writer-rounds.js";

const tempDir = useTempDirs("taquba-crash-");

describe("engine crash recovery", () => {
  it(
    "recovers the same over S3 (s3rver) with checkpoints overlapping and folding (killed during either)",
    {
      timeout: loadLimitTimeout(180_000),
    },
    () =>
      withinLoadLimit(180_000, async () => {
        const s3 = await startS3Server();
        try {
          const env = { ...process.env, AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1" };
          const url = `s3://${s3.bucket}/crash-beside?endpoint=${encodeURIComponent(s3.endpoint)}&forcePathStyle=true`;
          // Three rounds, at the first three of the six kill points the local cases take: six did not end within
          // the stretched limit (720 s) at a load of ~35, three took 58 s at a load of 44 and saw 24 checkpoints
          // beside a compaction, 7 of them folding. Both kinds are still required below.
          const seen = await crashRounds(
            tempDir,
            "beside",
            { location: url, store: new S3Store({ bucket: s3.bucket, prefix: "crash-beside", clientConfig: s3.clientConfig }), env },
            3,
            (s) => s.beside > 0 && s.folds > 0,
          );
          expect(seen.beside).toBeGreaterThan(0);
          expect(seen.folds).toBeGreaterThan(0);
        } finally {
          await s3.stop();
        }
      }),
  );
});
