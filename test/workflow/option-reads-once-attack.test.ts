/**
 * @module A submission's spec and options, `listRuns`' and `retryRun`'s
 * options, in shapes other than a plain object literal: a getter that
 * throws, a revoked Proxy, a getter that answers differently on its second
 * read, an object with no prototype, a frozen one, a class instance. Each
 * ends in a `ValidationError` naming the field, writing nothing, or is taken
 * with the values it gave on its one read of each field (a value checked
 * and another used would land a run the checks never saw).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StepOutcome, withCounting, type ListRunsOptions, type RunSpec } from "taquba";
import { dec, enc, openEnv, runnerOf } from "./helpers.js";
import { flipping, revoked, throwing } from "../support/hostile-options.js";
import { refusal } from "../support/refusal.js";

async function withEnv(act: (env: Awaited<ReturnType<typeof openEnv>>, seen: string[]) => Promise<void>, start = true): Promise<void> {
  const seen: string[] = [];
  const env = await openEnv(
    runnerOf(async (step) => {
      seen.push(dec(step.payload));
      return dec(step.payload) === "fail" ? StepOutcome.fail("failed on purpose") : StepOutcome.succeed(enc("ok"));
    }),
    { store: withCounting(new MemoryStore()), start },
  );
  try {
    await act(env, seen);
  } finally {
    await env.stop();
  }
}

describe("a submission's fields, each read once", () => {
  it("a getter that throws or a revoked Proxy anywhere in a RunSpec is a ValidationError naming it, and nothing is written", () =>
    withEnv(async (env) => {
      const input = enc("x");
      const cases: [unknown, RegExp][] = [
        [throwing("input"), /reading RunSpec\.input threw: no input today/],
        [throwing("runId", { input }), /reading RunSpec\.runId threw/],
        [{ input, options: throwing("priority") }, /reading RunOptions\.priority threw: no priority today/],
        [{ input, options: { flow: throwing("rule") } }, /reading RunOptions\.flow\.rule threw/],
        [{ input, options: { debounce: throwing("periodMs", { key: "k" }) } }, /reading RunOptions\.debounce\.periodMs threw/],
        [revoked(), /RunSpec must be an object, got a revoked Proxy/],
        [{ input, options: revoked() }, /RunOptions must be an object, got a revoked Proxy/],
        [{ input, options: { flow: revoked() } }, /RunOptions\.flow must be an object, got a revoked Proxy/],
        [{ input, options: { debounce: revoked() } }, /RunOptions\.debounce must be an object, got a revoked Proxy/],
      ];
      const store = env.store as ReturnType<typeof withCounting>;
      const puts = store.counts.puts;
      for (const [spec, says] of cases) {
        const err = await refusal(() => env.runtime.submit(spec as RunSpec));
        expect([err.message, ...err.issues].join("\n")).toMatch(says);
      }
      expect(store.counts.puts).toBe(puts);
      expect((await env.runtime.listRuns()).runs).toEqual([]);
    }));

  it("an input whose getter answers another array on a second read submits the one it answered first, under that input's digest", () =>
    withEnv(async (env, seen) => {
      const { value, reads } = flipping({ runId: ["r-1", "r-2"], input: [enc("first"), enc("second")] });
      const out = await env.runtime.submit(value as RunSpec);
      expect(out).toMatchObject({ runId: "r-1", newlySubmitted: true });
      expect(Math.max(...reads.values())).toBe(1);
      // Before the run ends, the same submission made plainly is its duplicate, not an input mismatch.
      await expect(env.runtime.submit({ runId: "r-1", input: enc("first") })).resolves.toMatchObject({ newlySubmitted: false });
      const worker = env.runtime.spawn();
      try {
        await env.runtime.wait("r-1");
      } finally {
        await worker.shutdown();
      }
      expect(seen).toEqual(["first"]);
    }, false));

  it("options whose getters answer a bad value on a second read are checked and used as first read", () =>
    withEnv(async (env, seen) => {
      const options = flipping({ maxAttemptsPerStep: [2, -5], priority: [3, Number.NaN], flow: [undefined, 7] });
      const flow = flipping({ rule: ["r", ""] });
      await env.runtime.submit({ runId: "r-1", input: enc("a"), options: options.value as never });
      await env.runtime.submit({ runId: "r-2", input: enc("b"), options: { flow: flow.value as never } });
      for (const reads of [options.reads, flow.reads]) expect(Math.max(...reads.values())).toBe(1);
      expect((await env.runtime.wait("r-1")).termination.status).toBe("succeeded");
      expect((await env.runtime.wait("r-2")).termination.status).toBe("succeeded");
      expect(seen.sort()).toEqual(["a", "b"]);
    }));

  it("objects with no prototype, frozen objects and class instances are read by their own fields: a field none takes is refused", () =>
    withEnv(async (env) => {
      class Options {
        priority = 1;
        describe(): string {
          return "a method on the prototype is no field";
        }
      }
      class WithExtra extends Options {
        tenant = "acme";
      }
      const bare = Object.assign(Object.create(null) as object, { input: enc("a"), runId: "bare" });
      await env.runtime.submit(bare as RunSpec);
      await env.runtime.submit(Object.freeze({ input: enc("b"), runId: "frozen", options: Object.freeze({ priority: 2 }) }));
      await env.runtime.submit({ input: enc("c"), runId: "instance", options: new Options() });
      const err = await refusal(() => env.runtime.submit({ input: enc("d"), runId: "extra", options: new WithExtra() }));
      expect(err.issues[0]).toMatch(/^RunOptions\.tenant is not an option/);
      const noProtoMisspelt = Object.assign(Object.create(null) as object, { input: enc("e"), runID: "x" });
      expect((await refusal(() => env.runtime.submit(noProtoMisspelt as RunSpec))).issues[0]).toMatch(/^RunSpec\.runID is not an option/);
      expect((await env.runtime.listRuns()).runs.map((r) => r.runId).sort()).toEqual(["bare", "frozen", "instance"]);
    }));
});

describe("listRuns' and retryRun's options, each read once", () => {
  it("a limit whose getter answers more on a second read pages by the limit first read", () =>
    withEnv(async (env) => {
      for (const id of ["a", "b", "c"]) await env.runtime.submit({ runId: id, input: enc(id) });
      const { value, reads } = flipping({ limit: [1, 1_000_000] });
      const page = await env.runtime.listRuns(value as ListRunsOptions);
      expect(page.runs).toHaveLength(1);
      expect(reads.get("limit")).toBe(1);
    }));

  it("a getter that throws or a revoked Proxy is a ValidationError naming it", () =>
    withEnv(async (env) => {
      await env.runtime.submit({ runId: "r-1", input: enc("fail") });
      expect((await env.runtime.wait("r-1")).termination.status).toBe("failed");
      expect((await refusal(() => env.runtime.listRuns(throwing("limit") as never))).issues.join()).toMatch(/reading listRuns\.limit threw/);
      expect((await refusal(() => env.runtime.listRuns(revoked() as never))).message).toMatch(/listRuns takes an options object, got a revoked Proxy/);
      expect((await refusal(() => env.runtime.retryRun("r-1", throwing("fromStep") as never))).issues.join()).toMatch(
        /reading RetryRunOptions\.fromStep threw/,
      );
      expect((await refusal(() => env.runtime.retryRun("r-1", revoked() as never))).message).toMatch(/retryRun takes an options object/);
      // A fromStep checked as 0 and read again as -1 would reopen a step that does not exist.
      const { value, reads } = flipping({ fromStep: [0, -1] });
      await env.runtime.retryRun("r-1", value as never);
      expect(reads.get("fromStep")).toBe(1);
    }));
});
