/**
 * @module Bytes a caller hands the runtime are stored as they were at the
 * call, though the call awaits before it writes them: a succeeding step's
 * result (its run result record written first), a signal's payload (the
 * key's lock and the wait index read first), a child run's input (the
 * parent marked first) and a group's members' inputs (the manifest written
 * first). Each is changed or detached right after the call; a view whose
 * bytes are gone at the call is refused, naming what it was.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StepOutcome } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { MEDDLINGS, detachByClone } from "../support/meddled-bytes.js";
import { refusal } from "../support/refusal.js";
import { enc, openEnv, overInline, recordingHook, runnerOf, until } from "./helpers.js";

const GIVEN = 7;

/** `size` bytes of `GIVEN`, a fresh array. */
const given = (size = 16) => new Uint8Array(size).fill(GIVEN);

/** A detached view: its bytes are gone before any call. */
function gone(): Uint8Array {
  const bytes = given();
  detachByClone.apply(bytes);
  return bytes;
}

describe("a succeeding step's result too large for the terminal record", () => {
  for (const meddling of MEDDLINGS) {
    it.skipIf(!meddling.available)(`reaches the hook and the outcome as returned, ${meddling.name} while the result record is written`, async () => {
      const result = overInline("x");
      const returned = result.slice();
      const gated = new GatedStore(new MemoryStore(), (key) => key.includes("/run-results/"));
      const hook = recordingHook();
      const env = await openEnv(
        runnerOf(async () => StepOutcome.succeed(result)),
        { store: gated, hook },
      );
      try {
        await env.runtime.submit({ runId: "r1", input: enc("in") });
        await gated.waitHeld(1);
        meddling.apply(result);
        gated.release(gated.held[0]!.key);
        expect((await env.runtime.wait("r1")).outcome?.result).toEqual(returned);
        await until(() => hook.seen.length > 0, "the hook");
        expect(hook.seen[0]!.result).toEqual(returned);
      } finally {
        await env.stop();
      }
    });
  }

  it("fails the run naming its step when the result's bytes are gone at the return", async () => {
    const env = await openEnv(runnerOf(async () => StepOutcome.succeed(gone())));
    try {
      await env.runtime.submit({ runId: "r2", input: enc("in") });
      const end = await env.runtime.wait("r2");
      expect(end.outcome?.status).toBe("failed");
      expect(end.outcome?.error).toContain('the result step 0 of run "r2" succeeds with is a view of a detached or shrunk ArrayBuffer');
    } finally {
      await env.stop();
    }
  });
});

/** A runner whose step 0 continues on signal "k"; step 1 records the signal it was entered with. */
function signalRunner() {
  const signals: (Uint8Array | null)[] = [];
  const runner = runnerOf(async (s) => {
    if (s.stepNumber === 0) return StepOutcome.continueOnSignal(enc("wait"), "k", 60_000);
    signals.push(s.signal == null ? null : s.signal.slice());
    return StepOutcome.succeed(enc("done"));
  });
  return { runner, signals };
}

describe("a signal's payload", () => {
  for (const meddling of MEDDLINGS) {
    it.skipIf(!meddling.available)(`is buffered as sent, ${meddling.name} right after the call`, async () => {
      const { runner, signals } = signalRunner();
      const env = await openEnv(runner);
      try {
        const payload = given();
        const sent = env.runtime.signal("k", payload);
        meddling.apply(payload);
        expect(await sent).toBe("buffered");
        await env.runtime.submit({ runId: "s1", input: enc("in") });
        await until(() => signals.length > 0, "step 1");
        expect(signals).toEqual([given()]);
      } finally {
        await env.stop();
      }
    });

    it.skipIf(!meddling.available)(`is delivered as sent, ${meddling.name} right after the call`, async () => {
      const { runner, signals } = signalRunner();
      const env = await openEnv(runner);
      try {
        await env.runtime.submit({ runId: "s2", input: enc("in") });
        await until(async () => (await env.runtime.status("s2"))?.step === 1, "s2 waits for the signal");
        const payload = given();
        const sent = env.runtime.signal("k", payload);
        meddling.apply(payload);
        expect(await sent).toBe("delivered");
        await until(() => signals.length > 0, "step 1");
        expect(signals).toEqual([given()]);
      } finally {
        await env.stop();
      }
    });
  }

  it("is refused, naming the signal, when its bytes are gone at the call", async () => {
    const env = await openEnv(signalRunner().runner);
    try {
      const err = await refusal(() => env.runtime.signal("k", gone()));
      expect(String(err)).toContain('the payload of signal "k" is a view of a detached or shrunk ArrayBuffer');
    } finally {
      await env.stop();
    }
  });
});

describe("a child run's input", () => {
  for (const meddling of MEDDLINGS) {
    it.skipIf(!meddling.available)(`reaches the child as given, ${meddling.name} right after children.start`, async () => {
      const inputs: Uint8Array[] = [];
      const runner = runnerOf(async (s) => {
        if (s.runId !== "p") {
          inputs.push(s.payload.slice());
          return StepOutcome.succeed(enc("child"));
        }
        const input = given();
        const started = s.children.start({ input, key: "c" });
        meddling.apply(input);
        await started;
        return StepOutcome.succeed(enc("parent"));
      });
      const env = await openEnv(runner);
      try {
        await env.runtime.submit({ runId: "p", input: enc("in") });
        expect((await env.runtime.wait("p")).outcome?.status).toBe("succeeded");
        await until(() => inputs.length > 0, "the child's step 0");
        expect(inputs).toEqual([given()]);
      } finally {
        await env.stop();
      }
    });
  }

  it("is refused, naming the parent's step, when its bytes are gone at the call", async () => {
    let refused: unknown;
    const runner = runnerOf(async (s) => {
      refused = await refusal(() => s.children.start({ input: gone(), key: "c" }));
      return StepOutcome.succeed(enc("parent"));
    });
    const env = await openEnv(runner);
    try {
      await env.runtime.submit({ runId: "p2", input: enc("in") });
      await env.runtime.wait("p2");
      expect(String(refused)).toContain('the input of the child run step 0 of run "p2" starts is a view of a detached or shrunk ArrayBuffer');
    } finally {
      await env.stop();
    }
  });
});

describe("a group member's input", () => {
  for (const meddling of MEDDLINGS) {
    it.skipIf(!meddling.available)(`reaches the member's run as given, ${meddling.name} right after the submission`, async () => {
      const inputs: Uint8Array[] = [];
      const env = await openEnv(
        runnerOf(async (s) => {
          inputs.push(s.payload.slice());
          return StepOutcome.succeed(enc("done"));
        }),
      );
      try {
        const input = given();
        const submitted = env.runtime.group("g").submit([{ key: "m", input }]);
        meddling.apply(input);
        await submitted;
        await until(() => inputs.length > 0, "the member's step 0");
        expect(inputs).toEqual([given()]);
      } finally {
        await env.stop();
      }
    });
  }

  it("is refused, naming the member, when its bytes are gone at the call", async () => {
    const env = await openEnv(runnerOf(async () => StepOutcome.succeed(enc("done"))));
    try {
      const err = await refusal(() => env.runtime.group("g").submit([{ key: "m", input: gone() }]));
      expect(String(err)).toContain('the input of member "m" is a view of a detached or shrunk ArrayBuffer');
    } finally {
      await env.stop();
    }
  });
});

describe("a memo value", () => {
  for (const meddling of MEDDLINGS) {
    it.skipIf(!meddling.available)(`is stored as put, ${meddling.name} while its write is held`, async () => {
      const gated = new GatedStore(new MemoryStore(), (key) => key.includes("/memos/m1/"));
      let read: Uint8Array | null | undefined;
      const runner = runnerOf(async (s) => {
        if (s.stepNumber === 0) {
          const value = given();
          const put = s.runMemo.put("k", value);
          await gated.waitHeld(1);
          meddling.apply(value);
          gated.release(gated.held[0]!.key);
          await put;
          return StepOutcome.continueNow(enc("next"));
        }
        read = await s.runMemo.get("k");
        return StepOutcome.succeed(enc("done"));
      });
      const env = await openEnv(runner, { store: gated });
      try {
        await env.runtime.submit({ runId: "m1", input: enc("in") });
        expect((await env.runtime.wait("m1")).outcome?.status).toBe("succeeded");
        expect(read).toEqual(given());
      } finally {
        await env.stop();
      }
    });
  }
});
