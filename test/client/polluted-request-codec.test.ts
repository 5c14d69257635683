/**
 * @module The client's inbox requests and answers decoded while
 * `Object.prototype` holds a name their writer left out: a request reads
 * as written (a submission does not become one "unless known", a job gets
 * no idempotency key or run id, run options no flow, debounce or priority)
 * and an answered error gets none of the prototype's fields, where before
 * such a value changed the request or failed it as malformed.
 */
import { describe, expect, it } from "vitest";
import { decodeAnswer, decodeRequest, encodeAnswer, encodeRequest, type InboxRequest } from "../../runtime/client/request-codec.js";
import { whilePolluted } from "../support/polluted-prototype.js";

const enc = (s: string) => new TextEncoder().encode(s);

const REQUESTS: InboxRequest[] = [
  { op: "submit", runId: "r1", input: enc("x"), options: { headers: {} }, kvOps: [] },
  { op: "submit", runId: "r2", input: enc("x"), options: { headers: {}, flow: { rule: "tenants" } }, kvOps: [] },
  { op: "job", job: { name: "send", payload: enc("p"), runOptions: { headers: { a: "b" } } } },
  { op: "retry", runId: "r1" },
];

const HOSTILE = {
  unlessKnown: true,
  idempotencyKey: "k",
  runId: "stolen",
  priority: 1,
  maxAttemptsPerStep: 1,
  runAt: 1,
  flow: { rule: "other" },
  debounce: { key: "d", periodMs: 1000 },
  concurrencyKey: "c",
  rateKey: "r",
  fromStep: 2,
  job: true,
  reason: "not this error's",
  groupId: "g",
  createdAtMs: 1,
};

describe("inbox requests and answers under a polluted Object.prototype", () => {
  it("each request decodes as it was written", async () => {
    const written = REQUESTS.map((r) => encodeRequest(r));
    const clean = written.map((b) => decodeRequest(b));
    await whilePolluted(HOSTILE, async () => {
      for (const [i, b] of written.entries()) expect({ ...decodeRequest(b) }, REQUESTS[i]!.op).toEqual({ ...clean[i]! });
    });
  });

  it("a request whose optional field the prototype holds with a wrong type is not refused as malformed", async () => {
    const b = encodeRequest(REQUESTS[0]!);
    await whilePolluted({ unlessKnown: "yes", priority: "high" }, async () => {
      expect(decodeRequest(b)).toMatchObject({ op: "submit", runId: "r1" });
    });
  });

  it("an answered error gets none of the prototype's fields", async () => {
    const b = encodeAnswer({ ok: false, error: { name: "RunNotFoundError", code: "RUN_NOT_FOUND", message: "no run" } });
    await whilePolluted(HOSTILE, async () => {
      const a = decodeAnswer(b);
      expect(a.ok).toBe(false);
      if (!a.ok) expect({ ...a.error }).toEqual({ name: "RunNotFoundError", code: "RUN_NOT_FOUND", message: "no run" });
    });
  });
});
