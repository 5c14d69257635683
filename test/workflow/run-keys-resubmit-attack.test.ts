/**
 * @module A run's record and pointer keys are checked once per run and
 * carried from step to step (`RunKeys`, `Queue.kvKeyRef`), and a step's
 * history entry is written without a look-up (`stageOwnedPutOnce`). Attacked over
 * a local directory with two runtimes in sequence: a run cancelled while
 * it waits, its id submitted again under the next runtime, a reopen between
 * two of its steps, and another run stepping beside it all along. Each run
 * must end as its own steps say, with a history entry for each of its own
 * steps and nothing of the other run's.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, StepOutcome, type StepRunner } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc, openEnv, until, type Env } from "./helpers.js";

const tempDir = useTempDirs("taquba-run-keys-");

/**
 * Payload `<tag>:<n>`: continues to `<tag>:<n+1>` up to 5, then succeeds with
 * the tag; `wait:<n>` at 2 waits for a signal no one sends.
 */
const runner = (seen: string[], gate?: { step: string; reached: () => void; go: Promise<void> }): StepRunner => ({
  async runStep(s) {
    const p = dec(s.payload);
    seen.push(`${s.runId}=${p}`);
    const [tag, n] = p.split(":") as [string, string];
    if (gate !== undefined && p === gate.step) {
      gate.reached();
      await gate.go;
    }
    if (tag === "wait" && n === "2") return StepOutcome.continueOnSignal(enc(`${tag}:3`), `never-${s.runId}`, 3_600_000);
    if (Number(n) >= 5) return StepOutcome.succeed(enc(tag));
    return StepOutcome.continueNow(enc(`${tag}:${Number(n) + 1}`));
  },
});

async function stepsOf(env: Env, runId: string): Promise<number[]> {
  const h = await env.runtime.inspectRun(runId);
  return (h?.steps ?? []).map((s) => s.step);
}

describe("a run's kept keys across a cancel, a resubmission of its id and reopens", () => {
  it("each run ends as its own steps say and keeps one history entry per step it ran", { timeout: 30_000 }, async () => {
    const dir = await tempDir();
    const seen: string[] = [];
    // First runtime: "r" waits at step 2 and is cancelled; "s" runs beside it.
    let env = await openEnv(runner(seen), { store: new LocalStore(dir) });
    try {
      await env.runtime.submit({ runId: "r", input: enc("wait:0") });
      await until(() => seen.includes("r=wait:2"), "r to wait at step 2");
      await until(async () => (await env.runtime.status("r"))?.step === 3, "r waiting");
      expect(await env.runtime.cancel("r")).toBe(true);
      expect((await env.runtime.wait("r")).termination.status).toBe("cancelled");
      await env.runtime.submit({ runId: "s", input: enc("s:0") });
      expect((await env.runtime.wait("s")).termination.status).toBe("succeeded");
    } finally {
      await env.stop();
    }

    // Second runtime over the same directory: the id "r" submitted again, held in its step 1 while this runtime stops.
    let reached!: () => void;
    const atGate = new Promise<void>((r) => (reached = r));
    let go!: () => void;
    const gateOpen = new Promise<void>((r) => (go = r));
    env = await openEnv(runner(seen, { step: "again:1", reached, go: gateOpen }), { store: new LocalStore(dir) });
    let stopping: Promise<void> | undefined;
    try {
      const again = await env.runtime.submit({ runId: "r", input: enc("again:0") });
      expect(again.newlySubmitted).toBe(true);
      await env.runtime.submit({ runId: "t", input: enc("t:0") });
      await atGate;
      stopping = env.runtime.close({ timeoutMs: 0 });
      go();
      await stopping;
    } finally {
      go();
      await stopping;
      await env.stop().catch(() => undefined);
    }

    // Third runtime: what the second left in flight goes on.
    env = await openEnv(runner(seen), { store: new LocalStore(dir) });
    try {
      const r = await env.runtime.wait("r");
      expect(r.termination.status).toBe("succeeded");
      expect(dec(r.outcome?.result)).toBe("again");
      const t = await env.runtime.wait("t");
      expect(t.termination.status).toBe("succeeded");
      expect(dec(t.outcome?.result)).toBe("t");
      // The resubmitted run's history is its own steps 0..5, the cancelled submission's gone with it or replaced.
      expect(await stepsOf(env, "r")).toEqual([0, 1, 2, 3, 4, 5]);
      expect(await stepsOf(env, "s")).toEqual([0, 1, 2, 3, 4, 5]);
      expect(await stepsOf(env, "t")).toEqual([0, 1, 2, 3, 4, 5]);
      // No step of one run ran with another's payload.
      for (const line of seen) {
        const [runId, payload] = line.split("=") as [string, string];
        const tag = payload.split(":")[0]!;
        expect({ runId, tag }).toEqual({ runId, tag: runId === "r" ? (tag === "wait" ? "wait" : "again") : runId });
      }
      expect(env.logged).toEqual([]);
    } finally {
      await env.stop();
    }
  });
});
