/**
 * @module The dashboard's run, group, job and dead-letter routes take an id
 * from the path, percent-decoded. A path whose percent-encoding is malformed
 * (`%ZZ`, a cut UTF-8 sequence) threw URIError out of the decode, and the
 * dashboard answered 500 "URI malformed", a fault of its own, for a request
 * that was wrong. Each read and action must answer 400 naming the path's
 * encoding, and change nothing.
 */
import { describe, expect, it } from "vitest";
import { withOwnerlessDashboard } from "./fixtures/ownerless-dashboard.js";

const BAD = ["%ZZ", "%E0%A4%A", "%", "ok%C3"];

describe("a dashboard path whose percent-encoding is malformed", () => {
  it("is answered 400 naming the path's encoding, by every route taking an id, and changes nothing", async () => {
    await withOwnerlessDashboard("taquba-dash-path-", async (base, session) => {
      for (const bad of BAD) {
        const requests: [string, RequestInit][] = [
          [`/api/runs/${bad}`, {}],
          [`/api/groups/${bad}`, {}],
          [`/api/runs/${bad}/cancel`, { method: "POST", body: "{}" }],
          [`/api/runs/${bad}/retry`, { method: "POST", body: "{}" }],
          [`/api/jobs/${bad}/retry`, { method: "POST", body: "{}" }],
          [`/api/dead/${bad}/redrive`, { method: "POST", body: "{}" }],
        ];
        for (const [path, init] of requests) {
          const headers = init.method === "POST" ? { "content-type": "application/json", origin: base } : undefined;
          const res = await fetch(base + path, { ...init, ...(headers === undefined ? {} : { headers }) });
          const body = (await res.json()) as { error?: { message?: string } };
          expect(res.status, `${init.method ?? "GET"} ${path}: ${JSON.stringify(body)}`).toBe(400);
          expect(body.error?.message, path).toMatch(/percent-encoding/);
        }
      }
      const stats = await (await session.reader()).stats("work");
      expect(stats).toMatchObject({ pending: 1, dead: 0 });
    });
  });
});
