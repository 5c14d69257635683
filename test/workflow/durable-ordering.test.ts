import { describe, expect, it } from "vitest";
import { MemoryStore, StepOutcome, type ObjectStore } from "taquba";
import { enc, openEnv, runnerOf, until } from "./helpers.js";

/** A memory store whose WAL writes can be held back, so commits apply in memory but do not become durable. */
function holdableStore(): ObjectStore & { hold(): void; release(): void; held: number } {
  const inner = new MemoryStore();
  let holding = false;
  let waiters: Array<() => void> = [];
  const s = {
    held: 0,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    },
    get: (k: string) => inner.get(k),
    delete: (k: string) => inner.delete(k),
    list: (p: string, o?: { startAfter?: string }) => inner.list(p, o),
    async put(k: string, b: Uint8Array, o?: { ifNoneMatch?: "*" }) {
      if (holding && k.includes("/wal/")) {
        s.held++;
        await new Promise<void>((r) => waiters.push(r));
      }
      return inner.put(k, b, o);
    },
  };
  return s;
}

describe("step ordering against durability", () => {
  it("a runner never sees step k+1 before step k's settlement is durable", async () => {
    const store = holdableStore();
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => (releaseA = r));
    const log: string[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        log.push(`${s.runId}:${s.stepNumber}`);
        if (s.runId === "a" && s.stepNumber === 0) await gateA;
        // Long enough for a's step-0 ack to be applied in memory meanwhile.
        if (s.runId === "b") await new Promise((r) => setTimeout(r, 20));
        return s.stepNumber === 0 ? StepOutcome.continueNow(s.payload) : StepOutcome.succeed(s.payload);
      }),
      // One slot: every settlement frees the full worker, which claims at once.
      { store, start: false, configure: (b) => b.maxConcurrentSteps(1) },
    );
    await env.runtime.submit({ input: enc("x"), runId: "a" });
    await env.runtime.submit({ input: enc("x"), runId: "b" });
    const worker = env.runtime.spawn();
    await until(() => log.includes("a:0"), "a's step 0 running");
    store.hold();
    releaseA(); // a's ack applies in memory but cannot become durable; the freed slot claims b's step 0
    await until(() => log.includes("b:0"), "b's step 0 running");
    // b's settlement frees the slot again; a's step 1 is now claimable in memory.
    await new Promise((r) => setTimeout(r, 100));
    expect(store.held).toBeGreaterThan(0);
    expect(log).not.toContain("a:1");
    store.release();
    await env.runtime.wait("a");
    await env.runtime.wait("b");
    expect(log).toContain("a:1");
    await worker.shutdown();
    await env.stop();
  });
});
