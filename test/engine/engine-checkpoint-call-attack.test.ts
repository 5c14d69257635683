/**
 * @module Attacks on the bounded `Engine.checkpoint()` over a LocalStore:
 * explicit calls made at seeded moments among commits, beside automatic
 * checkpoints, over a directory whose calls fail at random, while the
 * engine closes and while a second writer opens the same directory and
 * fences the first (see checkpoint-call-rounds.ts). Every call must settle
 * (none hangs), reject only with a typed error, and when it resolves a
 * manifest covering every WAL object landed before the call must be in the
 * directory; a reopen afterwards holds every acknowledged commit.
 */
import { describe, it } from "vitest";
import { LocalStore } from "taquba";
import { checkpointCallRounds } from "../support/checkpoint-call-rounds.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-checkpoint-call-");

describe("Engine.checkpoint() called among commits, faults, a close and a fencing writer (LocalStore)", () => {
  it(
    "every call settles, rejects only with a typed error, is covered when it resolves, and a reopen holds every acknowledged commit",
    async () => {
      await checkpointCallRounds("checkpoint-call-attack", 8, async () => {
        const dir = await tempDir();
        return { store: new LocalStore(dir), reopen: () => new LocalStore(dir) };
      });
    },
    HEAVY_TEST_MS,
  );
});
