/**
 * @module A delayed continue's payload as its runner returned it, when its
 * settlement, built in the return's turn, still has to await before it
 * encodes the next step's job: the claimed step's record was paged out by
 * a checkpoint and is loaded first, or the payload is large enough to be
 * written to an object of its own first. A runner that changes or
 * detaches its array meanwhile changes nothing stored (a detach used to
 * leave a record that named no bytes, or the wrong size of its object, and
 * a run that never ended).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, type ObjectStore, type StoredObject, StepOutcome } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { GatedStore } from "../support/gated-store.js";
import { DETACHINGS, MEDDLINGS } from "../support/meddled-bytes.js";
import { enc, type Env, openEnv, runnerOf, until } from "./helpers.js";

const RETURNED = 1;
const DELAY_MS = 1000;

/** A store whose gets wait, once armed, until released: a paged-out record's load is held open. */
class HeldReads extends ForwardingStore {
  armed = false;
  held = 0;
  #waiters: Array<() => void> = [];

  override async get(key: string): Promise<StoredObject | null> {
    if (this.armed) {
      this.held++;
      await new Promise<void>((r) => this.#waiters.push(r));
    }
    return super.get(key);
  }

  release(): void {
    this.armed = false;
    for (const w of this.#waiters.splice(0)) w();
  }
}

/**
 * A runner whose step 0 runs `beforeReturn`, then continues after a delay
 * with `size` bytes of `RETURNED`, handing the array to `returned`; later
 * steps record their payload and succeed.
 */
function delayedRunner(size: number, beforeReturn: () => Promise<void>) {
  const seen: Uint8Array[] = [];
  const state: { returned?: Uint8Array } = {};
  const runner = runnerOf(async (s) => {
    if (s.stepNumber > 0) {
      seen.push(s.payload.slice());
      return StepOutcome.succeed(enc("done"));
    }
    await beforeReturn();
    const payload = new Uint8Array(size).fill(RETURNED);
    state.returned = payload;
    return StepOutcome.continueAfter(payload, DELAY_MS);
  });
  return { runner, seen, state };
}

/** Writes enough after the step's claim that a checkpoint pages its record out (no cache keeps it). */
async function pageOut(env: Env): Promise<void> {
  for (let i = 0; i < 8; i++) {
    await env.queue.enqueue("other", enc(`filler ${i}`));
    await env.queue.flush();
  }
}

async function nextStepSees(env: Env, seen: Uint8Array[], runId: string): Promise<void> {
  await until(async () => {
    env.clock.advance(DELAY_MS);
    await env.queue.flush();
    return seen.length > 0;
  }, "step 1");
  expect((await env.runtime.wait(runId)).outcome?.status).toBe("succeeded");
}

describe("a delayed continue whose settlement loads the step's paged-out record first", () => {
  for (const meddling of MEDDLINGS) {
    it.skipIf(!meddling.available)(`continues with the payload returned, ${meddling.name} while the record loads`, async () => {
      const store = new HeldReads(new MemoryStore());
      let env!: Env;
      const { runner, seen, state } = delayedRunner(16, async () => {
        await pageOut(env);
        // The settlement's load of the record is the next read.
        store.armed = true;
      });
      env = await openEnv(runner, {
        store: store as ObjectStore,
        queueOptions: { recordCacheBytes: 0, engineOptions: { checkpointWalObjects: 2 } },
      });
      try {
        await env.runtime.submit({ runId: "r1", input: enc("in") });
        await until(() => store.held > 0, "the record's load held");
        meddling.apply(state.returned!);
        store.release();
        await nextStepSees(env, seen, "r1");
        expect(seen).toEqual([new Uint8Array(16).fill(RETURNED)]);
      } finally {
        store.release();
        await env.stop();
      }
    });
  }
});

describe("a delayed continue whose payload is written to an object of its own first", () => {
  const SIZE = 2048;
  // Only a detach: the object's bytes are framed at the call, and the size the job records is read after the write.
  for (const meddling of DETACHINGS) {
    it.skipIf(!meddling.available)(`continues with the payload returned, ${meddling.name} while the object is written`, async () => {
      const gated = new GatedStore(new MemoryStore(), (key) => key.includes("payloads/"));
      const { runner, seen, state } = delayedRunner(SIZE, async () => undefined);
      const env = await openEnv(runner, { store: gated, queueOptions: { payloadOffloadBytes: 1024 } });
      try {
        await env.runtime.submit({ runId: "r2", input: enc("in") });
        await gated.waitHeld(1);
        meddling.apply(state.returned!);
        gated.release(gated.held[0]!.key);
        await nextStepSees(env, seen, "r2");
        expect(seen).toEqual([new Uint8Array(SIZE).fill(RETURNED)]);
      } finally {
        await env.stop();
      }
    });
  }
});
