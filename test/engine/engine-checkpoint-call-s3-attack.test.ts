/**
 * @module The `Engine.checkpoint()` attack of
 * engine-checkpoint-call-attack.test.ts over the S3 protocol (s3rver on
 * loopback): the same seeded rounds (explicit calls among commits, random
 * store faults, a close, a second writer fencing the first), each under a
 * prefix of its own in one bucket. Over S3 a put-if-absent is a
 * conditional request and a listing is paged, not a directory read: every
 * call must still settle, reject only with a typed error, be covered when
 * it resolves, and a reopen must hold every acknowledged commit.
 */
import { describe, it } from "vitest";
import { S3Store } from "taquba";
import { checkpointCallRounds } from "../support/checkpoint-call-rounds.js";
import { scaledForLoad } from "../support/load.js";
import { useS3Server } from "../support/use-s3-server.js";

const server = useS3Server();

describe("Engine.checkpoint() called among commits, faults, a close and a fencing writer (S3Store on s3rver)", () => {
  it("every call settles, rejects only with a typed error, is covered when it resolves, and a reopen holds every acknowledged commit", {
    timeout: scaledForLoad(45_000),
  }, async () => {
    const run = `checkpoint-call-${Date.now()}`;
    await checkpointCallRounds("checkpoint-call-s3-attack", 8, async (i) => {
      const s3 = () => new S3Store({ bucket: server.bucket, prefix: `${run}/round-${i}`, clientConfig: server.clientConfig });
      return { store: s3(), reopen: s3 };
    });
  });
});
