/**
 * The workflow dispatcher on detached steps: envelope routing across several
 * spec packages, the outcome each typed transition becomes, and a permanent
 * step error (naming the path) for every value that breaks a boundary.
 */

import { describe, expect, it } from "vitest";
import {
  createValidator,
  defineHeaders,
  defineWorkflow,
  Step,
  StepError,
  StepOutcome,
  ValidationError,
  WorkflowDispatcher,
  type StepRunner,
  type WorkflowStepContext,
  type StepTransition,
} from "taquba";
import { decodeStepEnvelope, encodeStepEnvelope } from "taquba/generated";
import { orders } from "../../generated/index.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const W = "orders.order.fulfil";
const order: orders.OrderFulfilInput = { order_id: "o-1", lines: [{ sku: "A", quantity: 1 }], total_cents: 700 };

/** A second package's workflow, defined by hand: one step that echoes its input. */
type EchoCtx = WorkflowStepContext<"echo.say", object, { said: string }, never, Record<string, never>>;
interface EchoHandler {
  say(payload: { text: string }, ctx: EchoCtx): Promise<StepTransition<"echo.say", never, { said: string }, never>>;
}
const text = createValidator<{ text: string }>(
  "echo.say input",
  Object.assign((v: unknown) => typeof (v as { text?: unknown })?.text === "string", { errors: null }),
);
const said = createValidator<{ said: string }>(
  "echo.say result",
  Object.assign((v: unknown) => typeof (v as { said?: unknown })?.said === "string", { errors: null }),
);
const echoWorkflow = defineWorkflow<"echo.say", { text: string }, { said: string }, never, Record<string, never>, EchoHandler>({
  name: "echo.say",
  package: "echo",
  input: text,
  result: said,
  headers: defineHeaders({
    package: "echo",
    names: [],
    required: [],
    validator: createValidator(
      "echo headers",
      Object.assign(() => true, { errors: null }),
    ),
  }),
  entry: "say",
  steps: { say: { method: "say", payload: text, next: [] } },
  contractHash: "0",
});

/** A handler whose steps do what the test asks of them. */
function handler(over: Partial<orders.OrderFulfilHandler> = {}): orders.OrderFulfilHandler {
  return {
    reserve: async (p, ctx) =>
      ctx.next.awaitPayment.onSignal({ order_id: p.order_id }, { order_id: p.order_id, reservation_id: "r-1", total_cents: p.total_cents }),
    awaitPayment: async (p, ctx) =>
      ctx.signal === null
        ? ctx.fail({ reason: "payment_timeout" })
        : ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: ctx.signal.amount_cents }),
    pack: async (p, ctx) => ctx.next.ship.after(5_000, { order_id: p.order_id, parcel_id: "p-1", paid_cents: p.paid_cents }),
    ship: async (p, ctx) => ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: "T-1" }),
    ...over,
  };
}

function dispatcher(h: orders.OrderFulfilHandler = handler(), fallback?: StepRunner) {
  const b = orders
    .registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: h })
    .register(echoWorkflow, { say: async (p, ctx) => ctx.succeed({ said: p.text }) });
  return (fallback === undefined ? b : b.fallback(fallback)).build();
}

async function permanent(run: Promise<unknown>): Promise<string> {
  const e = await run.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(StepError);
  expect((e as StepError).kind).toBe("permanent");
  return (e as StepError).message;
}

const step = (workflow: string, name: string, payload: unknown, signal?: Uint8Array | null) =>
  Step.detached(encodeStepEnvelope(workflow, name, payload), signal === undefined ? {} : { signal });

describe("WorkflowDispatcher", () => {
  it("routes workflows of several packages and turns transitions into outcomes", async () => {
    const d = dispatcher();
    expect(d.workflows).toEqual(["echo.say", W]);
    const wait = await d.runStep(step(W, "reserve", order));
    expect(wait).toMatchObject({ kind: "continue", when: { kind: "onSignal", correlationKey: "order-payment:o-1", timeoutMs: 86_400_000 } });
    expect(decodeStepEnvelope((wait as { payload: Uint8Array }).payload)).toEqual({
      workflow: W,
      step: "await_payment",
      payload: { order_id: "o-1", reservation_id: "r-1", total_cents: 700 },
    });
    const packed = await d.runStep(step(W, "await_payment", { order_id: "o-1", reservation_id: "r-1", total_cents: 700 }, enc('{"amount_cents":700}')));
    expect(packed).toMatchObject({ kind: "continue", when: { kind: "immediate" } });
    expect(await d.runStep(step(W, "pack", { order_id: "o-1", reservation_id: "r-1", paid_cents: 700 }))).toMatchObject({
      when: { kind: "after", delayMs: 5_000 },
    });
    const done = await d.runStep(step(W, "ship", { order_id: "o-1", parcel_id: "p-1", paid_cents: 700 }));
    expect(done.kind).toBe("succeed");
    expect(JSON.parse(dec((done as { result: Uint8Array }).result))).toEqual({ order_id: "o-1", paid_cents: 700, tracking_number: "T-1" });
    const echo = await d.runStep(step("echo.say", "say", { text: "hi" }));
    expect(dec((echo as { result: Uint8Array }).result)).toBe('{"said":"hi"}');
  });

  it("a timed-out wait enters the step with a null signal; a typed failure becomes the run's reason", async () => {
    const out = await dispatcher().runStep(step(W, "await_payment", { order_id: "o-1", reservation_id: "r", total_cents: 1 }, null));
    expect(out).toEqual(StepOutcome.fail('{"reason":"payment_timeout"}'));
  });

  it("a wait can override its timeout", async () => {
    const d = dispatcher(
      handler({
        reserve: async (p, ctx) =>
          ctx.next.awaitPayment.onSignal({ order_id: "x" }, { order_id: p.order_id, reservation_id: "r", total_cents: 1 }, { timeoutMs: 60_000 }),
      }),
    );
    expect(await d.runStep(step(W, "reserve", order))).toMatchObject({ when: { kind: "onSignal", correlationKey: "order-payment:x", timeoutMs: 60_000 } });
  });

  it("refuses what breaks a boundary with a permanent error naming the path", async () => {
    const d = dispatcher();
    expect(await permanent(d.runStep(step(W, "reserve", { ...order, total_cents: "7" })))).toContain("/total_cents");
    expect(await permanent(d.runStep(step(W, "await_payment", { order_id: "o", reservation_id: "r", total_cents: 1 }, enc('{"amount_cents":"x"}'))))).toContain(
      "/amount_cents",
    );
    expect(await permanent(d.runStep(step(W, "await_payment", { order_id: "o", reservation_id: "r", total_cents: 1 }, enc("not json"))))).toContain("JSON");
    expect(await permanent(d.runStep(step(W, "await_payment", { order_id: "o", reservation_id: "r", total_cents: 1 })))).toContain("without a signal wait");
    expect(await permanent(d.runStep(step("nope.flow", "start", {})))).toContain('"nope.flow"');
    expect(await permanent(d.runStep(step(W, "teleport", {})))).toContain('"teleport"');
    expect(await permanent(d.runStep(Step.detached(enc("raw bytes"))))).toContain("envelope");
    const badNext = dispatcher(handler({ pack: async (p, ctx) => ctx.next.ship({ order_id: p.order_id } as orders.OrderFulfilShipPayload) }));
    expect(await permanent(badNext.runStep(step(W, "pack", { order_id: "o", reservation_id: "r", paid_cents: 1 })))).toContain("/parcel_id");
    const badError = dispatcher(handler({ ship: async (_p, ctx) => ctx.fail({ reason: "lost" } as unknown as orders.OrderFulfilError) }));
    expect(await permanent(badError.runStep(step(W, "ship", { order_id: "o", parcel_id: "p", paid_cents: 1 })))).toContain("/reason");
  });

  it.each(["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"])(
    "an envelope naming the inherited step %s is an unknown step, dead-lettered as permanent",
    async (name) => {
      expect(await permanent(dispatcher().runStep(step(W, name, {})))).toContain(`has no step "${name}"`);
    },
  );

  it("refuses a value that is not a transition of the step's own context", async () => {
    let stolen: unknown;
    const d = dispatcher(
      handler({
        reserve: async (p, ctx) => {
          stolen = ctx.next.awaitPayment.onSignal({ order_id: p.order_id }, { order_id: p.order_id, reservation_id: "r", total_cents: 1 });
          return stolen as orders.OrderFulfilReserveTransition;
        },
        pack: async () => stolen as orders.OrderFulfilPackTransition,
        ship: async () => ({ kind: "succeed" }) as unknown as orders.OrderFulfilShipTransition,
      }),
    );
    await d.runStep(step(W, "reserve", order));
    expect(await permanent(d.runStep(step(W, "pack", { order_id: "o", reservation_id: "r", paid_cents: 1 })))).toContain("own context");
    expect(await permanent(d.runStep(step(W, "ship", { order_id: "o", parcel_id: "p", paid_cents: 1 })))).toContain("own context");
  });

  it("keeps a StepError's kind, retries other handler errors, and hands non-envelopes to a fallback runner", async () => {
    const transient = dispatcher(handler({ pack: async () => Promise.reject(new Error("503")) }));
    const e = await transient.runStep(step(W, "pack", { order_id: "o", reservation_id: "r", paid_cents: 1 })).catch((x: unknown) => x);
    expect((e as StepError).kind).toBe("transient");
    const fallback = dispatcher(handler(), { runStep: async (s) => StepOutcome.succeed(s.payload) });
    expect(await fallback.runStep(Step.detached(enc("raw")))).toEqual(StepOutcome.succeed(enc("raw")));
  });

  it("registration checks: each workflow once, a method for every step", () => {
    const b = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: handler() });
    expect(() => b.register(orders.orderFulfilWorkflow, handler())).toThrow(ValidationError);
    const partial = { reserve: handler().reserve } as unknown as orders.OrderFulfilHandler;
    expect(() => WorkflowDispatcher.builder().register(orders.orderFulfilWorkflow, partial)).toThrow(/awaitPayment\(payload, ctx\) for step "await_payment"/);
  });
});
