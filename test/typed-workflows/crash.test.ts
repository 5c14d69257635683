/**
 * A typed workflow survives a crash: a child process runs `order.fulfil`
 * over a local directory until its `ship` step hangs holding the lease, and
 * is killed with SIGKILL. This process reopens the queue over the same
 * directory (recovery makes the interrupted step claimable again), and
 * `ship` runs again under this process's handler and ends the run; the steps the child committed
 * (reserve's memoized reservation, the payment) are not redone.
 */

import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, NoopTerminalHook, Queue, WorkflowDispatcher, WorkflowRuntime } from "taquba";
import { orders } from "../../generated/index.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/order-worker.ts", import.meta.url));
const tempDir = useTempDirs("taquba-typed-crash-");

describe("typed workflow crash recovery", () => {
  // The child takes about 3 s of CPU to load the package through tsx: 14 s of wall time on two cores at
  // load 14-20, 41 s at load 22 (past half of twice 30 s, the limit when the load is read low). The limit
  // guards against a hang and is stretched by the load (support/load.ts), from the base of the lifecycle
  // tests' children, which load the package the same way.
  it("resumes at the step that was running when the worker was SIGKILLed", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      const dir = await tempDir();
      const child = startScript(FIXTURE, [dir, "o-9"], { env: { ...process.env, NODE_OPTIONS: "" } });
      await child.waitFor((lines) => lines.includes("ship#1"));
      expect(await child.kill()).toMatchObject({ signal: "SIGKILL" });
      expect(backgroundFailures(child)).toEqual([]);
      const reserved = child.lines.find((l) => l.startsWith("reserve#1 "))?.slice("reserve#1 ".length);
      expect(child.lines.filter((l) => !l.startsWith("reserve#1")).sort()).toEqual(["await_payment#1", "pack#1", "ship#1", "submitted"].sort());

      const store = new LocalStore(dir);
      const clock = new MockClock(Date.now());
      const queue = await Queue.open(store, "shop", { clock, flushIntervalMs: 1 });
      const seen: string[] = [];
      const handler: orders.OrderFulfilHandler = {
        reserve: async () => Promise.reject(new Error("reserve must not run again")),
        awaitPayment: async () => Promise.reject(new Error("await_payment must not run again")),
        pack: async () => Promise.reject(new Error("pack must not run again")),
        async ship(p, ctx) {
          seen.push(`ship#${ctx.attempt}:${p.parcel_id}`);
          return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: `TRK-${ctx.runId}` });
        },
      };
      const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: handler }).build();
      const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
        .leaseMs(60_000)
        .logger({ error: () => undefined })
        .build();
      // A claim is not made durable before its step runs, so the kill may have lost the child's
      // claim (the step is pending again and runs as attempt 1) or not (opening the queue requeues
      // the claim the dead process held, and the step runs as attempt 2).
      const attempt = queue.recovery.requeued.length === 1 ? 2 : 1;
      const worker = runtime.spawn();
      try {
        const client = orders.client(runtime).orderFulfil;
        expect(await client.status("order-o-9")).toMatchObject({ step: 3 });
        const end = await client.wait("order-o-9");
        expect(end).toEqual({
          status: "succeeded",
          runId: "order-o-9",
          finalStep: 3,
          result: { order_id: "o-9", paid_cents: 900, tracking_number: "TRK-order-o-9" },
        });
        expect(seen).toEqual([`ship#${attempt}:parcel-${reserved}`]);
      } finally {
        await worker.shutdown();
        await queue.close();
      }
    }),
  );
});
