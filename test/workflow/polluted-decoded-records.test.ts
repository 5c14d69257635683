/**
 * @module The workflow's records decoded while `Object.prototype` holds one
 * of their optional field names (a library merged a parsed
 * `{"__proto__": ...}` into one): each decoded record reads the field as
 * absent, as written, never the prototype's value. Before, a polluted
 * `cancelRequested` cancelled every run, and a polluted name of the wrong
 * type made run records and step pointers look corrupted.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type StepRunner } from "taquba";
import {
  decodeGroupMember,
  decodeRunOutcome,
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeGroupMember,
  encodeRunOutcome,
  encodeRunRecord,
  encodeStepPointer,
  encodeTerminalRecord,
  type RunRecord,
  type TerminalRecord,
} from "../../runtime/workflow/records/records.js";
import type { RunId } from "../../runtime/workflow/runs/run-id.js";
import type { RunOutcome } from "../../runtime/workflow/runs/run-types.js";
import { whilePolluted } from "../support/polluted-prototype.js";
import { dec, enc, openEnv } from "./helpers.js";

const twoSteps: StepRunner = {
  async runStep(s) {
    if (dec(s.payload) === "first") return StepOutcome.continueNow(enc("second"));
    return StepOutcome.succeed(enc(`done ${dec(s.payload)}`));
  },
};

/** Names of run records' and step pointers' optional fields, each set to a value that would change or break a run read through it. */
const POLLUTANTS: Record<string, unknown>[] = [
  { cancelRequested: true },
  { parent: 7 },
  { priority: "high" },
  { maxAttempts: "many" },
  { group: 5 },
  { name: 5 },
  { signalWait: 5 },
];

describe("workflow records decoded under a polluted Object.prototype", () => {
  for (const fields of POLLUTANTS) {
    it(`a two-step run succeeds with its own result while Object.prototype holds ${Object.keys(fields)[0]}`, async () => {
      const env = await openEnv(twoSteps);
      try {
        await whilePolluted(fields, async () => {
          const { runId } = await env.runtime.submit({ runId: "r1", input: enc("first") });
          const end = await env.runtime.wait(runId);
          expect(end.termination.status).toBe("succeeded");
          expect(dec(end.outcome?.result)).toBe("done second");
        });
        expect(env.logged).toEqual([]);
      } finally {
        await env.stop();
      }
    });
  }

  /** A termination's optional fields, each set to what a succeeded run must never carry. */
  const TERMINATION_POLLUTANTS: Record<string, unknown>[] = [
    { errorKind: "fatal" },
    { error: "polluted" },
    { supersededBy: "r0" },
    { publicError: "polluted" },
    { errorCode: "POLLUTED" },
  ];
  for (const fields of TERMINATION_POLLUTANTS) {
    const [name] = Object.keys(fields);
    it(`a run that ends while Object.prototype holds ${name} records and reports no ${name}`, async () => {
      const env = await openEnv(twoSteps);
      try {
        await whilePolluted(fields, async () => {
          const { runId } = await env.runtime.submit({ runId: "r1", input: enc("first") });
          await env.runtime.wait(runId);
        });
        const end = await env.runtime.wait("r1" as RunId);
        expect(end.termination.status).toBe("succeeded");
        expect(Object.hasOwn(end.outcome!, name!)).toBe(false);
        expect(Object.hasOwn(end.termination, name!)).toBe(false);
        expect(dec(end.outcome?.result)).toBe("done second");
        expect(env.logged).toEqual([]);
      } finally {
        await env.stop();
      }
    });
  }

  it("each decoder reads an optional field it was written without as absent, nested ones included", async () => {
    const run: RunRecord = {
      runId: "r1",
      submittedAtMs: 1,
      inputSha256: "00",
      incarnation: "i1",
      headers: {},
      parent: { runId: "p", step: 0 },
    };
    const terminal: TerminalRecord = {
      runId: "r1" as RunId,
      status: "succeeded",
      finalStep: 1,
      terminatedAtMs: 2,
      incarnation: "i1",
      token: "t",
      inline: { headers: {} },
    };
    const outcome: RunOutcome = { runId: "r1" as RunId, status: "succeeded", headers: {}, finalStep: 1 } as RunOutcome;
    const bytes = {
      run: encodeRunRecord(run),
      pointer: encodeStepPointer({ step: 1, jobId: "j" }),
      terminal: encodeTerminalRecord(terminal),
      outcome: encodeRunOutcome(outcome),
      member: encodeGroupMember({ key: "k", runId: "r1", incarnation: "i1", state: "active" }),
    };
    const hostile = {
      cancelRequested: true,
      hasChildren: true,
      parentClose: "abandon",
      signalWait: "ck",
      name: "n",
      error: "not this run's",
      errorKind: "permanent",
      supersededBy: "r9",
      publicError: "not this run's",
      errorCode: "E",
      result: enc("not this run's"),
      terminatedAtMs: 5,
    };
    await whilePolluted(hostile, async () => {
      const r = decodeRunRecord(bytes.run, "run");
      expect([r.cancelRequested, r.hasChildren, r.parent?.parentClose]).toEqual([undefined, undefined, undefined]);
      const p = decodeStepPointer(bytes.pointer, "pointer");
      expect([p.signalWait, p.name]).toEqual([undefined, undefined]);
      const t = decodeTerminalRecord(bytes.terminal, "terminal");
      expect([t.error, t.errorKind, t.supersededBy, t.inline?.result, t.inline?.publicError]).toEqual([undefined, undefined, undefined, undefined, undefined]);
      const o = decodeRunOutcome(bytes.outcome, "outcome");
      expect([o.error, o.errorKind, o.result, o.publicError, o.errorCode]).toEqual([undefined, undefined, undefined, undefined, undefined]);
      const m = decodeGroupMember(bytes.member, "member");
      expect([m.error, m.errorKind, m.terminatedAtMs]).toEqual([undefined, undefined, undefined]);
    });
  });
});
