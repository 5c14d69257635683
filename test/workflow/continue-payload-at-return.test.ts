/**
 * @module A continuing step's payload is what its runner returned. A runner
 * that keeps the array and changes it after returning (here from a timer),
 * while its settlement waits on something before it commits, changes
 * the next step's payload; in the common
 * path, where the settlement commits in the turn the return is seen, the
 * same holds without a copy.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StepOutcome } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { enc, holdableStore, openEnv, runnerOf, until } from "./helpers.js";
import type { Step } from "taquba";

const RETURNED = 1;
const CHANGED = 9;

/** A runner whose step 0 continues with 16 bytes of `RETURNED` and fills them with `CHANGED` from a timer once it returned; later steps record their payload and succeed. */
function changingRunner(continueWith: (payload: Uint8Array) => StepOutcome, beforeReturn: () => Promise<void> = async () => undefined) {
  const seen: Uint8Array[] = [];
  const state = { changed: false };
  const runner = runnerOf(async (s) => {
    if (s.stepNumber > 0) {
      seen.push(s.payload.slice());
      return StepOutcome.succeed(enc("done"));
    }
    await beforeReturn();
    const payload = new Uint8Array(16).fill(RETURNED);
    setTimeout(() => {
      payload.fill(CHANGED);
      state.changed = true;
    }, 0);
    return continueWith(payload);
  });
  return { runner, seen, state };
}

describe("a continuing step's payload taken at the runner's return", () => {
  it("with step output replay, a payload changed while the replay record is written reaches the next step as returned", async () => {
    // Step 0's replay record held (its settlement waits for it); later ones pass.
    const gated = new GatedStore(new MemoryStore(), (key) => /\/step-outputs\/r1\/@[^/]+\/0\//.test(key));
    const { runner, seen, state } = changingRunner((p) => StepOutcome.continueNow(p));
    const env = await openEnv(runner, { store: gated, configure: (b) => b.stepOutputReplay() });
    try {
      await env.runtime.submit({ runId: "r1", input: enc("in") });
      await gated.waitHeld(1);
      await until(() => state.changed, "the runner's timer");
      gated.release(gated.held[0]!.key);
      await until(() => seen.length > 0, "step 1");
      expect(seen).toEqual([new Uint8Array(16).fill(RETURNED)]);
      expect((await env.runtime.wait("r1")).outcome?.status).toBe("succeeded");
    } finally {
      await env.stop();
    }
  });

  it("a step continued on a signal, whose settlement waits for the key's lock, continues with the payload returned", async () => {
    const store = holdableStore();
    let enter!: () => void;
    const entered = new Promise<void>((r) => {
      enter = r;
    });
    let go!: () => void;
    const released = new Promise<void>((r) => {
      go = r;
    });
    const { runner, seen, state } = changingRunner(
      (p) => StepOutcome.continueOnSignal(p, "k", 60_000),
      async () => {
        enter();
        await released;
      },
    );
    const env = await openEnv(runner, { store });
    try {
      await env.runtime.submit({ runId: "r2", input: enc("in") });
      await entered;
      // A signal on the key holds its lock until its buffered write is durable: held here.
      store.hold();
      const signalled = env.runtime.signal("k", enc("sig"));
      await until(() => store.held > 0, "the signal's write held");
      go();
      await until(() => state.changed, "the runner's timer");
      store.release();
      expect(await signalled).toBe("buffered");
      await until(() => seen.length > 0, "step 1");
      expect(seen).toEqual([new Uint8Array(16).fill(RETURNED)]);
    } finally {
      await env.stop();
    }
  });

  it("a step settled in the return's turn continues with the payload returned, changed after by a timer", async () => {
    const { runner, seen, state } = changingRunner((p) => StepOutcome.continueNow(p));
    const env = await openEnv(runner);
    try {
      await env.runtime.submit({ runId: "r3", input: enc("in") });
      await until(() => seen.length > 0 && state.changed, "step 1 and the runner's timer");
      expect(seen).toEqual([new Uint8Array(16).fill(RETURNED)]);
      expect((await env.runtime.wait("r3")).outcome?.status).toBe("succeeded");
    } finally {
      await env.stop();
    }
  });

  for (const size of [16, 64, 65, 300]) {
    it(`a next step claimed in the settlement is handed the ${size} B returned, changed by the runner while that settlement is not yet durable`, async () => {
      const store = holdableStore();
      const seen: Uint8Array[] = [];
      const steps: Step[] = [];
      let returned: Uint8Array | undefined;
      const runner = runnerOf(async (s) => {
        steps.push(s);
        if (s.stepNumber > 0) {
          seen.push(s.payload.slice());
          return StepOutcome.succeed(enc("done"));
        }
        // Step 0's settlement (with step 1 claimed in it) applies in memory but is held from the store.
        store.hold();
        returned = new Uint8Array(size).fill(RETURNED);
        return StepOutcome.continueNow(returned);
      });
      const env = await openEnv(runner, { store });
      try {
        await env.runtime.submit({ runId: "r5", input: enc("in") });
        await until(() => store.held > 0, "step 0's settlement written");
        // Step 1 was claimed in that settlement: it is handed out, not claimed from pending.
        expect((await env.queue.view().listJobs("workflow-steps", "claimed")).items).toHaveLength(1);
        returned!.fill(CHANGED);
        store.release();
        await until(() => seen.length > 0, "step 1");
        expect(seen).toEqual([new Uint8Array(size).fill(RETURNED)]);
        expect(steps.map((s) => [s.stepNumber, s.attempt])).toEqual([
          [0, 1],
          [1, 1],
        ]);
        expect((await env.runtime.wait("r5")).outcome?.status).toBe("succeeded");
      } finally {
        await env.stop();
      }
    });
  }

  it("a payload whose bytes are gone fails the run, naming its step", async () => {
    const env = await openEnv(
      runnerOf(async () => {
        const payload = new Uint8Array(8);
        structuredClone(payload.buffer, { transfer: [payload.buffer] });
        return StepOutcome.continueNow(payload);
      }),
    );
    try {
      await env.runtime.submit({ runId: "r4", input: enc("in") });
      const end = await env.runtime.wait("r4");
      expect(end.outcome?.status).toBe("failed");
      expect(end.outcome?.error).toContain('the payload step 0 of run "r4" continues with is a view of a detached or shrunk ArrayBuffer');
    } finally {
      await env.stop();
    }
  });
});
