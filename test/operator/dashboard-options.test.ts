/**
 * @module `startDashboard` reads its options once: the token every request
 * is checked against is the one checked at start (a getter answering
 * differently later cannot open the page), and a wrong or unreadable
 * option is a `ValidationError` naming it.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, ValidationError } from "taquba";
import { OperatorSession } from "../../operator/cli/session.js";
import { Operations } from "../../operator/inspect/operations.js";
import { startDashboard, type DashboardOptions } from "../../operator/dashboard/server.js";

function options(): DashboardOptions {
  const session = new OperatorSession({ storeUrl: "memory://", name: "app", stepQueue: "workflow-steps", store: new MemoryStore() });
  return { ops: new Operations(session), refresh: async () => false, info: { name: "app", stepQueue: "workflow-steps", store: "memory://" }, port: 0 };
}

describe("startDashboard options", () => {
  it("checks each request against the token read at start, whatever a getter answers later", async () => {
    const token = "t".repeat(20);
    let reads = 0;
    const opts = Object.defineProperty(options(), "token", {
      enumerable: true,
      get() {
        reads++;
        // The first answer is checked at start; a later one would leave the page open.
        return reads === 1 ? token : undefined;
      },
    });
    const server = await startDashboard(opts);
    try {
      const res = await fetch(new URL("/api/info", server.url.split("?")[0]));
      expect(res.status).toBe(401);
      const ok = await fetch(new URL("/api/info", server.url.split("?")[0]), { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(reads).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("names an option of the wrong type, one whose getter throws, and options that are not an object", async () => {
    const refusal = async (opts: unknown) => {
      const err = await startDashboard(opts as DashboardOptions).then(
        async (s) => {
          await s.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      return (err as Error).message;
    };
    expect(await refusal({ ...options(), port: "4400" })).toMatch(/DashboardOptions\.port must be a whole number from 0 to 65535 .*got "4400" \(a string\)/);
    expect(await refusal({ ...options(), pollIntervalMs: 50 })).toMatch(/DashboardOptions\.pollIntervalMs .* got 50/);
    expect(await refusal({ ...options(), token: 12345 })).toMatch(/DashboardOptions\.token must be a string, got 12345/);
    const throwing = Object.defineProperty(options(), "host", {
      enumerable: true,
      get() {
        throw new Error("no host today");
      },
    });
    expect(await refusal(throwing)).toMatch(/reading DashboardOptions\.host threw: no host today/);
    expect(await refusal(null)).toMatch(/DashboardOptions must be an object, got null/);
  });
});
