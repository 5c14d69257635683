/**
 * @module A child's result too large to travel with its end (over the
 * signal payload room) reaches the parent whole: the end says it was
 * omitted and the parent reads it from the child's result record, also
 * after a restart between the child's end and the parent's read.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, StepOutcome, type StepRunner } from "taquba";
import { dec, enc, openEnv, until } from "./helpers.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("wf-child-large-");
const SIZE = 1024 * 1024;

/** A child whose result is SIZE bytes of a pattern; its parent checks every byte. */
function runner(seen: { parentReads: number }): StepRunner {
  return {
    async runStep(s) {
      const p = dec(s.payload);
      if (p === "parent") {
        const c = await s.children.start({ input: enc("child") });
        return StepOutcome.continueOnChild(enc("join"), c.completionKey);
      }
      if (p === "join") {
        seen.parentReads++;
        const o = await s.children.outcome(s.signal as Uint8Array);
        const r = o.result!;
        const whole = r.byteLength === SIZE && r.every((b, i) => b === (i * 7) % 251);
        return StepOutcome.succeed(enc(`${o.status}:${r.byteLength}:${whole}`));
      }
      if (p === "child") return StepOutcome.continueOnSignal(enc("child-end"), `go-${s.runId}`, 3_600_000);
      return StepOutcome.succeed(Uint8Array.from({ length: SIZE }, (_, i) => (i * 7) % 251));
    },
  };
}

describe("a child's large result", () => {
  it("reaches its parent whole, across a restart before the parent reads it", async () => {
    const store = new LocalStore(await tempDir());
    const clock = new MockClock(1_700_000_000_000);
    const seen = { parentReads: 0 };
    const first = await openEnv(runner(seen), { store, clock });
    await first.runtime.submit({ runId: "big", input: enc("parent") });
    await until(async () => (await first.runtime.status("big-s0-0"))?.step === 1, "the child waits");
    await first.worker?.shutdown();
    expect(await first.runtime.signal("go-big-s0-0", enc("go"))).toBe("delivered");
    await first.queue.close();

    const second = await openEnv(runner(seen), { store, clock });
    try {
      await until(async () => (await second.runtime.outcome("big")) !== null, "the parent ends", 10_000);
      expect(dec((await second.runtime.outcome("big"))?.result)).toBe(`succeeded:${SIZE}:true`);
      expect(seen.parentReads).toBe(1);
    } finally {
      await second.stop();
    }
  });
});
