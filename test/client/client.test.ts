/**
 * @module `TaqubaClient` against an owner in the same process, over a local
 * directory: every command's answer, reads and waits, bad input refused
 * before anything is written, a client without an owner, unreadable inbox
 * objects moved aside, and a request replayed after the owner failed
 * between applying it and answering it.
 */
import { describe, expect, it } from "vitest";
import {
  InputMismatchError,
  InvalidRunIdError,
  LocalStore,
  RequestRefusedError,
  ReservedHeaderError,
  RunNotFoundError,
  StoreUnavailableError,
  TaqubaClient,
  TimeoutError,
  ValidationError,
  MemoryStore,
  NoopTerminalHook,
  Queue,
  WorkflowRuntime,
  serveClients,
  type ObjectStore,
} from "taquba";
import { appRunner } from "./fixtures/app.js";
import { failWhen } from "../support/failing-store.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { openOwner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const tempDir = useTempDirs("taquba-client-");
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  // The owner keeps a placeholder in each inbox folder.
  for await (const o of store.list(prefix)) if (!o.key.endsWith("/~keep")) out.push(o.key);
  return out;
}

const inbox = (what: string) => `${STORE_NAME}/inbox/${STEP_QUEUE}/${what}/`;

describe("TaqubaClient with an owner", () => {
  it("answers submit, duplicate, mismatch, signal, clearSignal and cancel as the runtime does, and waits for ends", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    try {
      const first = await client.submit({ runId: "noop-1", input: enc({ n: 1 }) });
      expect(first).toMatchObject({ runId: "noop-1", newlySubmitted: true });
      // Duplicates of an active run (one that waits for a signal stays active).
      const active = await client.submit({ runId: "dup", input: enc({ wait: "dup-key" }) });
      expect(await client.submit({ runId: "dup", input: enc({ wait: "dup-key" }) })).toMatchObject({ runId: active.runId, newlySubmitted: false });
      await expect(client.submit({ runId: "dup", input: enc({ wait: "other" }) })).rejects.toBeInstanceOf(InputMismatchError);
      const end = await client.wait("noop-1");
      expect(end.termination.status).toBe("succeeded");
      expect(dec(end.outcome?.result)).toBe(JSON.stringify({ n: 1 }));
      expect((await client.status("noop-1"))?.state).toBe("terminated");
      expect((await client.outcome("noop-1"))?.status).toBe("succeeded");

      // A run id drawn by the client.
      const fresh = await client.submit({ input: enc({ n: 3 }) });
      expect(fresh.newlySubmitted).toBe(true);
      expect((await client.wait(fresh.runId)).termination.status).toBe("succeeded");

      // Signals: buffered before anyone waits, delivered to a waiter.
      expect(await client.signal("early", enc("x"))).toBe("buffered");
      expect(await client.clearSignal("early")).toBe(true);
      expect(await client.clearSignal("early")).toBe(false);
      await client.submit({ runId: "waiter", input: enc({ wait: "pay:1" }) });
      await until(
        "the waiter waits",
        async () => (await client.status("waiter"))?.state === "pending" && (await owner.runtime.status("waiter"))?.step === 1,
        10_000,
      );
      expect(await client.signal("pay:1", enc("paid"))).toBe("delivered");
      const paid = await client.wait("waiter");
      expect(dec(paid.outcome?.result)).toBe(JSON.stringify("paid"));

      // Cancel: true for an active run, false for an ended or unknown one.
      await client.submit({ runId: "to-cancel", input: enc({ wait: "never" }) });
      expect(await client.cancel("to-cancel")).toBe(true);
      const cancelled = await client.wait("to-cancel");
      expect(cancelled.termination.status).toBe("cancelled");
      // Ended without a worker (its step waited for a signal): the outcome is the termination, as the status says.
      expect(cancelled.outcome).toMatchObject({ runId: "to-cancel", status: "cancelled", errorKind: "cancelled" });
      expect(await client.outcome("to-cancel")).toEqual(cancelled.outcome);
      expect(await client.cancel("to-cancel")).toBe(false);
      expect(await client.cancel("nobody")).toBe(false);
      await expect(client.wait("nobody")).rejects.toBeInstanceOf(RunNotFoundError);
      expect(await client.waitTimeout("waiter", 10)).not.toBeNull();

      // Every request was answered and removed (the owner deletes a request just after answering it).
      await until("the inbox is empty", async () => (await keysUnder(store, inbox("requests"))).length === 0);
      expect(await keysUnder(store, inbox("answers"))).toEqual([]);
    } finally {
      await client.close();
      await owner.stop();
    }
  });

  it("refuses bad input before writing anything, with the runtime's errors", async () => {
    const store = new LocalStore(await tempDir());
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 100 });
    try {
      await expect(client.submit({ runId: "no spaces allowed", input: enc(1) })).rejects.toBeInstanceOf(InvalidRunIdError);
      await expect(client.submit({ runId: "x".repeat(129), input: enc(1) })).rejects.toBeInstanceOf(InvalidRunIdError);
      await expect(client.submit({ input: enc(1), options: { headers: { "workflow.step": "9" } } })).rejects.toBeInstanceOf(ReservedHeaderError);
      await expect(client.submit({ input: "text" as unknown as Uint8Array })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.submit({ input: enc(1), options: { runAt: Number.NaN } })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.submit({ input: enc(1), options: { maxAttemptsPerStep: 0 } })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.signal("", enc(1))).rejects.toBeInstanceOf(ValidationError);
      await expect(client.signal("k", "payload" as unknown as Uint8Array)).rejects.toBeInstanceOf(ValidationError);
      await expect(client.cancel("bad id!")).rejects.toBeInstanceOf(InvalidRunIdError);
      // Rejects, as the runtime's waitTimeout does, rather than throwing at the call.
      await expect(client.waitTimeout("r", Number.POSITIVE_INFINITY)).rejects.toThrow(/waitTimeout's timeout must be a number of milliseconds/);
      await expect(client.waitTimeout("r", "5" as unknown as number)).rejects.toThrow(/got "5" \(a string\)/);
      expect(await keysUnder(store, `${STORE_NAME}/`)).toEqual([]);
      await expect(TaqubaClient.open(store, { name: "bad/../name" })).rejects.toBeInstanceOf(ValidationError);
      await expect(TaqubaClient.open(store, { name: STORE_NAME, pollIntervalMs: 1 })).rejects.toBeInstanceOf(ValidationError);
      await expect(TaqubaClient.open(store, { name: STORE_NAME, timeoutMs: Number.NaN })).rejects.toBeInstanceOf(ValidationError);
    } finally {
      await client.close();
    }
  });

  it("a second close() resolves only when the first has closed the client, not at once", async () => {
    const client = await TaqubaClient.open(new LocalStore(await tempDir()), { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 100 });
    const order: string[] = [];
    const first = client.close().then(() => order.push("first"));
    const second = client.close().then(() => order.push("second"));
    await Promise.all([first, second]);
    expect(order).toEqual(["first", "second"]);
    await expect(client.submit({ input: enc(1) })).rejects.toThrow(/closed/i);
  });

  it("open reads each option once, and a wrong or unreadable one is a ValidationError naming it", async () => {
    const store = new LocalStore(await tempDir());
    const refusal = async (opts: unknown): Promise<string> => {
      const err = await TaqubaClient.open(store, opts as { name: string }).then(
        async (c) => {
          await c.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      return (err as Error).message;
    };
    const throwing = Object.defineProperty({ name: STORE_NAME }, "timeoutMs", {
      enumerable: true,
      get() {
        throw new Error("no timeout here");
      },
    });
    expect(await refusal(throwing)).toMatch(/reading TaqubaClientOptions\.timeoutMs threw: no timeout here/);
    expect(await refusal("app")).toMatch(/TaqubaClientOptions must be an object, got "app" \(a string\)/);
    expect(await refusal(null)).toMatch(/TaqubaClientOptions must be an object, got null/);
    expect(await refusal({ name: 5 })).toMatch(/TaqubaClientOptions\.name must be the store name .* got 5/);
    expect(await refusal({ name: "bad/../name" })).toMatch(/^TaqubaClientOptions\.name: invalid queue store name/);
    expect(await refusal({ name: STORE_NAME, queueName: "a/b" })).toMatch(/^TaqubaClientOptions\.queueName: invalid queue name "a\/b"/);
    expect(await refusal({ name: STORE_NAME, memoPrefix: "m/" })).toMatch(/TaqubaClientOptions\.memoPrefix must be a non-empty prefix/);
    expect(await refusal({ name: STORE_NAME, timeoutMs: "5000" })).toMatch(
      /TaqubaClientOptions\.timeoutMs must be a number of ms in 1\.\.86400000, got "5000" \(a string\)/,
    );
    expect(await refusal({ name: STORE_NAME, pollIntervalMs: 1 })).toMatch(
      /TaqubaClientOptions\.pollIntervalMs must be a number of ms in 200\.\.3600000, got 1/,
    );
    expect(await refusal({ name: STORE_NAME, clock: { now: 5 } })).toMatch(
      /TaqubaClientOptions\.clock must be an object with a now\(\) method \(a Clock\), got an object/,
    );

    // A Proxy is asked for each field once: a second read answering differently cannot slip past the check.
    const reads = new Map<string | symbol, number>();
    const answers: Record<string, unknown[]> = { name: [STORE_NAME, "other/../x"], timeoutMs: [1000, Number.NaN] };
    const proxy = new Proxy(
      {},
      {
        get(_t, k) {
          const n = reads.get(k) ?? 0;
          reads.set(k, n + 1);
          return typeof k === "string" ? answers[k]?.[Math.min(n, 1)] : undefined;
        },
      },
    );
    const client = await TaqubaClient.open(store, proxy as { name: string });
    try {
      expect(Object.fromEntries(reads)).toEqual({ name: 1, queueName: 1, memoPrefix: 1, timeoutMs: 1, pollIntervalMs: 1, clock: 1 });
      expect(client.queueName).toBe("workflow-steps");
    } finally {
      await client.close();
    }
  });

  it("times out clearly when no owner runs, and the request is applied once an owner starts", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const client = await TaqubaClient.open(`file://${dir}`, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 300 });
    try {
      const err = await client.submit({ runId: "late", input: enc({ n: 1 }) }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TimeoutError);
      expect((err as Error).message).toMatch(/no owner answered the submission of run "late" within 300 ms/);
      expect(await client.status("late")).toBeNull();
      expect(await keysUnder(store, inbox("requests"))).toHaveLength(1);
      const owner = await openOwner(store);
      try {
        await until("the late request is applied", async () => (await owner.runtime.status("late")) !== null, 10_000);
        expect((await client.wait("late")).termination.status).toBe("succeeded");
        await until("the inbox is empty", async () => (await keysUnder(store, inbox("requests"))).length === 0);
      } finally {
        await owner.stop();
      }
    } finally {
      await client.close();
    }
  });

  it("moves malformed and foreign inbox objects aside with a reason and keeps serving", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    try {
      const errors: unknown[] = [];
      const original = console.error;
      console.error = (...a: unknown[]) => errors.push(a);
      try {
        await store.put(`${inbox("requests")}00000000000000000000000000`, new TextEncoder().encode("not msgpack at all"));
        await store.put(`${inbox("requests")}0000000000000000000000000A`, new Uint8Array([0x81, 0xa1, 0x76, 0x09]));
        await store.put(`${inbox("requests")}hello.txt`, new TextEncoder().encode("someone else's file"));
        expect(await client.submit({ runId: "after-junk", input: enc({ n: 1 }) })).toMatchObject({ newlySubmitted: true });
      } finally {
        console.error = original;
      }
      // "hello.txt" sorts after the request, so it may be handled just after the answer.
      await until("three objects moved aside", async () => (await keysUnder(store, inbox("dead"))).length === 3);
      const dead = await keysUnder(store, inbox("dead"));
      expect(owner.inbox.stats.deadLettered).toBe(3);
      const reason = new TextDecoder().decode((await store.get(dead.find((k) => k.endsWith("hello.txt"))!))!.body);
      expect(reason).toMatch(/not a request id/);
      // The owner deletes a request just after answering it.
      await until("the inbox is empty", async () => (await keysUnder(store, inbox("requests"))).length === 0);
    } finally {
      await client.close();
      await owner.stop();
    }
  });

  it("answers from the applied mark when the owner failed after applying: a signal is not delivered twice", async () => {
    const dir = await tempDir();
    let failAnswers = 0;
    const store = failWhen(new LocalStore(dir), (call, key) =>
      call === "put" && key.includes("/answers/") && failAnswers-- > 0 ? new StoreUnavailableError("put", key, new Error("injected")) : undefined,
    );
    const owner = await openOwner(store, { listIntervalMs: 50 });
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    const original = console.error;
    console.error = () => {};
    try {
      await client.submit({ runId: "w", input: enc({ wait: "k" }) });
      await until("the run waits", async () => (await owner.runtime.status("w"))?.step === 1, 10_000);
      failAnswers = 1;
      const submitted = await client.submit({ runId: "s", input: enc({ n: 1 }) });
      expect(submitted.newlySubmitted).toBe(true);
      failAnswers = 1;
      expect(await client.signal("k", enc("once"))).toBe("delivered");
      expect(owner.inbox.stats.replayed).toBe(2);
      expect(dec((await client.wait("w")).outcome?.result)).toBe(JSON.stringify("once"));
      // Nothing was buffered by a second application.
      expect(await client.clearSignal("k")).toBe(false);
    } finally {
      console.error = original;
      await client.close();
      await owner.stop();
    }
  });

  it("carries a large input, and refuses a second inbox loop over the same step queue", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 20_000 });
    try {
      expect(() => serveClients(owner.queue, owner.runtime, { store })).toThrow(ValidationError);
      const big = "x".repeat(1024 * 1024);
      await client.submit({ runId: "big", input: enc({ big }) });
      expect(dec((await client.wait("big")).outcome?.result)).toBe(JSON.stringify({ big }));
    } finally {
      await client.close();
      await owner.stop();
    }
  });

  it("reports an owner's refusal the client cannot check in advance", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await openOwner(store);
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 10_000 });
    try {
      // A WorkflowRuntime owner serves no jobs.
      const err = await client.submit({ kind: "job", name: "x.y" } as never, {} as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      await client.submit({ runId: "ok", input: enc(1) });
      expect(RequestRefusedError).toBeDefined();
    } finally {
      await client.close();
      await owner.stop();
    }
  });

  it("a read after a commit sees it, even while an older refresh of the view is under way", async () => {
    const base = new MemoryStore();
    const queue = await Queue.open(base, STORE_NAME, { flushIntervalMs: 1 });
    const runtime = WorkflowRuntime.builder(queue, base, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
    let gate: Promise<void> | undefined;
    let entered!: () => void;
    const inFirstRefresh = new Promise<void>((r) => (entered = r));
    // The client's store answers WAL reads late while `gate` is closed: a refresh that read before a commit ends after it.
    const slowReads: ObjectStore = {
      async get(key) {
        const r = await base.get(key);
        if (gate !== undefined && key.includes("/db/wal/")) {
          entered();
          await gate;
        }
        return r;
      },
      put: (k, b, o) => base.put(k, b, o),
      delete: (k) => base.delete(k),
      async *list(prefix, o) {
        const listed: Array<{ key: string; size: number }> = [];
        for await (const x of base.list(prefix, o)) listed.push(x);
        if (gate !== undefined && prefix.includes("/db/wal")) {
          entered();
          await gate;
        }
        yield* listed;
      },
    };
    const client = await TaqubaClient.open(slowReads, { name: STORE_NAME, queueName: STEP_QUEUE });
    try {
      expect(await client.status("r1")).toBeNull();
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      const first = client.status("r1");
      await inFirstRefresh;
      await runtime.submit({ runId: "r1", input: enc({ wait: "k" }) });
      const second = client.status("r1");
      open();
      expect(await first).toBeNull();
      expect((await second)?.runId).toBe("r1");
    } finally {
      await client.close();
      await queue.close();
    }
  });
});
