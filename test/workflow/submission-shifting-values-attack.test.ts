/**
 * @module A submission whose caller objects answer differently on each
 * read: a hand-made KV op whose key passes the reserved-prefix check and then
 * names a key of the runtime's, and run headers whose values change after
 * they were checked. What commits is what was checked, read once.
 */
import { describe, expect, it } from "vitest";
import { SettlementEffects, StepOutcome, type KvOp } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";

/** An object whose `name` field answers `first`, then `later` on every read after. */
function shifting<T extends object>(base: T, name: string, first: unknown, later: unknown): T {
  let reads = 0;
  return Object.defineProperty(base, name, { enumerable: true, get: () => (reads++ === 0 ? first : later) });
}

describe("a submission's values read once", () => {
  it("a hand-made KV op whose key shifts to the runtime's prefix after the check commits under the key that was checked", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    const effects = new SettlementEffects();
    effects.kvOps.push(shifting({ kind: "put", value: enc("mine") } as unknown as KvOp, "key", "app/fine", "workflow/runs/hijacked"));
    await env.runtime.submit({ input: enc("x"), runId: "shift", effects });
    expect(dec(await env.queue.kvGet("app/fine"))).toBe("mine");
    expect(await env.queue.kvGet("workflow/runs/hijacked")).toBeNull();
    // The caller's own effects are left as they were given.
    expect(effects.kvOps).toHaveLength(1);
    await env.stop();
  });

  it("run headers whose values change after the check carry the values that were checked", async () => {
    const seen: Record<string, string>[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        seen.push({ ...s.headers });
        return StepOutcome.succeed(s.payload);
      }),
    );
    const headers = shifting({} as Record<string, string>, "tenant", "a", 5);
    await env.runtime.submit({ input: enc("x"), runId: "h", options: { headers } });
    await until(() => seen.length === 1);
    expect(seen[0]!.tenant).toBe("a");
    await env.stop();
  });
});
