/**
 * @module A run's input is what its submit call saw. The submission reads
 * the store before it enqueues the first step; a caller that changes the
 * input's bytes meanwhile changes neither the first step's payload nor the
 * input the run's record holds. Input whose bytes are gone at the call is
 * refused, naming the run.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, type ObjectStore, StepOutcome, type StepRunner, ValidationError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { openEnv } from "./helpers.js";

const tempDir = useTempDirs("taquba-submit-input-");

/** Succeeds with the step's payload as its result. */
const echo: StepRunner = {
  async runStep(s) {
    return StepOutcome.succeed(new Uint8Array(s.payload));
  },
};

const stores: { name: string; make(): Promise<ObjectStore> }[] = [
  { name: "MemoryStore", make: async () => new MemoryStore() },
  { name: "LocalStore", make: async () => new LocalStore(await tempDir()) },
];

describe.each(stores)("a run's input as its submit call saw it ($name)", ({ make }) => {
  it("input changed while the submission reads the store: the first step gets the bytes seen", async () => {
    const env = await openEnv(echo, { store: await make() });
    try {
      await env.runtime.wait((await env.runtime.submit({ runId: "r1", input: new Uint8Array(4) })).runId);
      // The earlier run's end is read and forgotten before the new run's first step is enqueued.
      const input = new Uint8Array(32).fill(1);
      const submitted = env.runtime.submit({ runId: "r1", input });
      input.fill(2);
      expect((await submitted).newlySubmitted).toBe(true);
      const end = await env.runtime.wait("r1");
      expect(end.outcome?.result).toEqual(new Uint8Array(32).fill(1));
    } finally {
      await env.stop();
    }
  });

  it("input detached at the call is refused naming the run, and no run is made", async () => {
    const env = await openEnv(echo, { store: await make() });
    try {
      const input = new Uint8Array(8).fill(1);
      structuredClone(input.buffer, { transfer: [input.buffer] });
      const err = await env.runtime.submit({ runId: "r2", input }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toBe(
        'the input of run "r2" is a view of a detached or shrunk ArrayBuffer, whose bytes are gone; pass a view of live bytes',
      );
      expect(await env.runtime.status("r2")).toBeNull();
    } finally {
      await env.stop();
    }
  });
});
