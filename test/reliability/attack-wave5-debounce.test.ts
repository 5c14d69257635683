/**
 * @module Attack on debounced runs: submissions of one key at once from the
 * runtime and several clients over the inbox, a cancel of the run waiting
 * in a window, and a debounced run under a flow rule. Exactly one run runs
 * per window; every other one ends superseded and names its successor.
 */
import { describe, expect, it } from "vitest";
import {
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  serveClients,
  StepOutcome,
  TaqubaClient,
  WorkflowRuntime,
  type ObjectStore,
  type StepRunner,
} from "taquba";
import { testRandom } from "../support/seed.js";
import { until } from "../support/until.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const NAME = "wf";
const STEPS = "workflow-steps";
const HOUR = 3_600_000;

function recordingRunner(rules?: StepRunner["flowRules"]): StepRunner & { ran: string[] } {
  const ran: string[] = [];
  return {
    ran,
    ...(rules === undefined ? {} : { flowRules: rules }),
    async runStep(s) {
      ran.push(dec(s.payload));
      return StepOutcome.succeed(s.payload);
    },
  };
}

async function owner(store: ObjectStore, runner: StepRunner, clock: MockClock | undefined, serve: boolean) {
  const queue = await Queue.open(store, NAME, { flushIntervalMs: 1, ...(clock === undefined ? {} : { clock }) });
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).queueName(STEPS).build();
  const worker = runtime.spawn();
  const inbox = serve ? serveClients(queue, runtime, { store, listIntervalMs: 10, logger: { error: () => undefined } }) : undefined;
  return {
    queue,
    runtime,
    async stop() {
      await inbox?.stop();
      await worker.shutdown();
      await queue.close();
    },
  };
}

/** The runs of `ids` that ended superseded, each with its successor. */
async function supersessions(runtime: WorkflowRuntime, ids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const id of ids) {
    const s = await runtime.status(id);
    if (s?.state !== "terminated") continue;
    expect(s, id).toMatchObject({ status: "cancelled", errorKind: "superseded" });
    expect(ids, `${id} names a run of the window`).toContain(s.supersededBy);
    out.set(id, s.supersededBy!);
  }
  return out;
}

describe("attack: debounced runs", () => {
  it("the runtime and three clients submit one key at once: one run survives the window and runs once; the others form one chain of supersessions", async () => {
    const { seed, random } = testRandom("debounce from many clients");
    console.log(`debounce from many clients: seed ${seed} (TAQUBA_TEST_SEED replays it)`);
    const store = new MemoryStore();
    const runner = recordingRunner();
    const first = await owner(store, runner, undefined, true);
    const clients = await Promise.all([0, 1, 2].map(() => TaqubaClient.open(store, { name: NAME, queueName: STEPS, timeoutMs: 60_000 })));
    const debounce = { key: `digest/acme\u0000 ✓ ${"x".repeat(400)}`, periodMs: HOUR };
    const ids: string[] = [];
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 40; i++) {
      const id = `r${String(i).padStart(2, "0")}`;
      ids.push(id);
      const who = Math.floor(random() * 4);
      const spec = { runId: id, input: enc(id), options: { debounce } };
      calls.push(who === 3 ? first.runtime.submit(spec) : clients[who]!.submit(spec));
      if (random() < 0.3) await new Promise((r) => setTimeout(r, Math.floor(random() * 5)));
    }
    const answers = (await Promise.all(calls)) as Array<{ newlySubmitted: boolean }>;
    expect(answers.every((a) => a.newlySubmitted)).toBe(true);
    const ended = await supersessions(first.runtime, ids);
    const alive = ids.filter((id) => !ended.has(id));
    expect(alive, "runs left waiting in the window").toHaveLength(1);
    const successors = new Set(ended.values());
    expect(
      ids.filter((id) => !successors.has(id)),
      "runs no one was replaced by (the chain's first)",
    ).toHaveLength(1);
    expect(successors.size, "each run is replaced by a different run: one chain").toBe(ids.length - 1);
    for (const c of clients) await c.close();
    await first.stop();
    // The window ends: the survivor runs, alone, once.
    const clock = new MockClock(Date.now() + 2 * HOUR);
    const second = await owner(store, runner, clock, false);
    expect((await second.runtime.wait(alive[0]!)).termination.status).toBe("succeeded");
    await until("steps settle", async () => runner.ran.length >= 1);
    expect(runner.ran).toEqual(alive);
    await second.stop();
  });

  it("a cancel of the run waiting in a window closes the window: the next submission opens a new one and runs, the cancelled run stays cancelled", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const runner = recordingRunner();
    const env = await owner(new MemoryStore(), runner, clock, false);
    const debounce = { key: "k", periodMs: 1000 };
    await env.runtime.submit({ runId: "a", input: enc("a"), options: { debounce } });
    await env.runtime.submit({ runId: "b", input: enc("b"), options: { debounce } });
    expect(await env.runtime.cancel("b")).toBe(true);
    clock.advance(100);
    const c = await env.runtime.submit({ runId: "c", input: enc("c"), options: { debounce } });
    expect(c.newlySubmitted).toBe(true);
    expect(await env.runtime.status("a")).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: "b" });
    const b = await env.runtime.status("b");
    expect(b).toMatchObject({ state: "terminated", status: "cancelled" });
    expect(b?.state === "terminated" ? b.errorKind : undefined, "b was cancelled, not superseded").not.toBe("superseded");
    const listed = (await env.runtime.listRuns({})).runs.find((r) => r.runId === "c");
    expect(listed?.heldBy, "c waits a full period of its own window").toEqual({ reason: "debounced", key: "k", until: clock.now() + 1000 });
    clock.advance(1000);
    expect((await env.runtime.wait("c")).termination.status).toBe("succeeded");
    expect(runner.ran).toEqual(["c"]);
    await env.stop();
  });

  it("debounced runs under a flow rule: a superseded run takes no slot of the rule; the survivor runs", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const runner = recordingRunner(() => ({ one: { concurrency: { limit: 1 }, rateLimit: { limit: 1, periodMs: 10 * HOUR } } }));
    const env = await owner(new MemoryStore(), runner, clock, false);
    const options = { debounce: { key: "k", periodMs: 1000 }, flow: { rule: "one", concurrencyKey: "acme", rateKey: "acme" } };
    for (const id of ["a", "b", "c"]) await env.runtime.submit({ runId: id, input: enc(id), options });
    clock.advance(1000);
    expect((await env.runtime.wait("c")).termination.status).toBe("succeeded");
    expect(runner.ran).toEqual(["c"]);
    for (const id of ["a", "b"]) expect(await env.runtime.status(id), id).toMatchObject({ status: "cancelled", errorKind: "superseded" });
    await env.stop();
  });
});
