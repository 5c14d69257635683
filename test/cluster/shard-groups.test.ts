/**
 * @module Run groups, job groups and operator listings across the shards
 * of a sharded store, through `TaqubaClient`, with every shard's owner
 * (queue, runtime, inbox) in this process over one MemoryStore: members
 * land on every shard, status and results come from all of them, a
 * shard's owner restarts in the middle, a replayed request runs no member
 * twice, and listings merge the shards with one stable cursor.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  FLOW_CONCURRENCY_KEY_HEADER,
  GroupRecreatedError,
  MockClock,
  NoopTerminalHook,
  WorkflowRuntime,
  FLOW_RULE_HEADER,
  JobRunner,
  MemoryStore,
  Queue,
  TaqubaClient,
  ValidationError,
  createShards,
  serveClients,
  type ObjectStore,
} from "taquba";
import { keyedEmailJob, tenantLimitedJob } from "../jobs/fixtures.js";
import { appRunner, openOwner, STEP_QUEUE, type OwnerApp } from "../client/fixtures/app.js";
import { shardOfRun, shardStoreName, stableHash } from "../../runtime/client/shard-route.js";
import { answerKey, appliedKey, requestKey } from "../../runtime/client/inbox-layout.js";
import { decodeAnswer, encodeRequest, rebuildError, type AnsweredError, type AnswerValue, type InboxRequest } from "../../runtime/client/request-codec.js";
import { ulid } from "ulid";
import { encodeJobPayload } from "../../runtime/jobs/job-codec.js";
import { groupTag, memberRunId } from "../../runtime/workflow/groups/group-keys.js";

const SHARDS = 4;
const enc = new TextEncoder();
const dec = new TextDecoder();
const json = (v: unknown): Uint8Array => enc.encode(JSON.stringify(v));

class Shards {
  readonly owners: OwnerApp[] = [];
  constructor(readonly store: ObjectStore) {}
  static async open(store: ObjectStore): Promise<Shards> {
    await createShards(store, "app", SHARDS);
    const s = new Shards(store);
    for (let i = 0; i < SHARDS; i++) s.owners.push(await s.#open(i));
    return s;
  }
  #open(i: number): Promise<OwnerApp> {
    return openOwner(this.store, { name: shardStoreName("app", i), listIntervalMs: 20 });
  }
  /** Stops shard `i`'s owner and opens a new one. */
  async restart(i: number): Promise<void> {
    await this.owners[i]!.stop();
    this.owners[i] = await this.#open(i);
  }
  /** A new owner opens shard `i` while the old one still runs (it is fenced, as a process that lost its lease). */
  async takeOver(i: number): Promise<void> {
    const old = this.owners[i]!;
    this.owners[i] = await this.#open(i);
    await old.stop().catch(() => undefined);
  }
  async stop(): Promise<void> {
    await Promise.all(this.owners.map((o) => o.stop()));
  }
}

const open: Array<{ close(): Promise<void> } | Shards> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await ("stop" in o ? o.stop() : o.close());
});

async function setUp(): Promise<{ store: MemoryStore; shards: Shards; client: TaqubaClient }> {
  const store = new MemoryStore();
  const shards = await Shards.open(store);
  open.push(shards);
  const client = await TaqubaClient.open(store, { name: "app", queueName: STEP_QUEUE, timeoutMs: 30_000, pollIntervalMs: 200 });
  open.push(client);
  return { store, shards, client };
}

/** Member keys whose runs cover every shard. */
function keysOnEveryShard(groupId: string, n: number): string[] {
  const keys = Array.from({ length: n }, (_, i) => `m${i}`);
  const tag = groupTag(groupId);
  const hit = new Set(keys.map((k) => shardOfRun(memberRunId(tag, k), SHARDS)));
  expect(hit.size, "the members spread over every shard").toBe(SHARDS);
  return keys;
}

describe("run groups across shards", () => {
  it.each(["restart", "takeOver"] as const)(
    "submits members onto every shard and streams every member's result, through an owner %s",
    async (how) => {
      const { shards, client } = await setUp();
      const group = client.group("import-1");
      const keys = keysOnEveryShard("import-1", 24);
      // Half the members wait for a signal (routed with the member's run id), a few fail, the rest succeed at once.
      const input = (k: string, i: number) => (i % 2 === 0 ? { wait: `pay:${group.runIdOf(k)}` } : i % 5 === 0 ? { fail: `bad ${k}` } : { k });
      const out = await group.submit(keys.map((k, i) => ({ key: k, input: json(input(k, i)) })));
      expect(out.submitted).toBe(keys.length);
      expect(out.members.map((m) => m.key)).toEqual(keys);
      expect(await group.keys()).toEqual(keys);

      const streamed: string[] = [];
      const results = (async () => {
        const got = [];
        for await (const r of group.results()) {
          streamed.push(r.key);
          got.push(r);
        }
        return got;
      })();
      // Awaited below; a failed assertion before then must not leave it unhandled.
      results.catch(() => undefined);
      await expect.poll(() => streamed.length, { timeout: 20_000 }).toBe(keys.length / 2);
      const st = await group.status();
      expect(st).toMatchObject({ total: keys.length, unsubmitted: 0, succeeded: 10, failed: 2 });
      expect(st!.pending + st!.running).toBe(12);
      const listed = await group.members();
      expect(listed!.map((m) => m.key)).toEqual(keys);
      expect(listed!.filter((m) => m.state === "pending" || m.state === "running").map((m) => m.key)).toEqual(keys.filter((_, i) => i % 2 === 0));
      expect(listed!.find((m) => m.key === "m5")).toMatchObject({ state: "failed", error: "bad m5", shard: group.shardOf("m5") });

      // A shard's owner goes away and another opens it while members wait there.
      const waiting = keys.filter((_, i) => i % 2 === 0);
      const restarted = group.shardOf(waiting[0]!);
      await shards[how](restarted);
      for (const k of waiting) expect(await client.signal(`pay:${group.runIdOf(k)}`, enc.encode(`paid ${k}`))).toBe("delivered");

      const all = await results;
      expect(all.map((r) => r.key).sort()).toEqual([...keys].sort());
      expect(new Set(all.map((r) => r.key)).size, "each member once").toBe(keys.length);
      for (const [i, k] of keys.entries()) {
        const r = all.find((x) => x.key === k)!;
        if (i % 2 === 0) expect(dec.decode(r.outcome!.result!)).toBe(`paid ${k}`);
        else if (i % 5 === 0) expect(r).toMatchObject({ status: "failed", error: `bad ${k}` });
        else expect(r.status).toBe("succeeded");
      }
      expect(new Set(all.map((r) => group.shardOf(r.key))).size, "results from every shard").toBe(SHARDS);
      expect(await group.status()).toMatchObject({ total: 24, unsubmitted: 0, pending: 0, running: 0, succeeded: 22, failed: 2, cancelled: 0 });
      expect((await group.join()).map((r) => r.key)).toEqual(keys);

      // Submitting again changes nothing: ended members are left alone (retryRun runs one again).
      const again = await group.submit(keys.map((k, i) => ({ key: k, input: json(input(k, i)) })));
      expect(again.submitted).toBe(0);
      expect(again.members.every((m) => m.submission === "existing")).toBe(true);
      await expect(group.submit([{ key: keys[1]!, input: json({ other: true }) }])).rejects.toMatchObject({ name: "InputMismatchError" });
    },
    60_000,
  );

  it("a group a shard's runtime drives keeps its members on that shard, and a client reaches every member", async () => {
    const { shards, client } = await setUp();
    const HOME = 2;
    const local = shards.owners[HOME]!.runtime.group("local-1");
    const keys = Array.from({ length: 12 }, (_, i) => `m${i}`);
    // Even members wait for a signal routed with their run id; m3 fails; the rest succeed at once.
    const input = (k: string, i: number) => (i % 2 === 0 ? { wait: `pay:${local.runIdOf(k)}` } : k === "m3" ? { fail: "bad m3" } : { k });
    for (const k of keys) expect(shardOfRun(local.runIdOf(k), SHARDS), "every member routes to the runtime's shard").toBe(HOME);
    expect(keys.filter((k) => local.runIdOf(k) !== memberRunId(groupTag("local-1"), k)).length, "most needed a suffix").toBeGreaterThan(0);
    expect((await local.submit(keys.map((k, i) => ({ key: k, input: json(input(k, i)) })))).submitted).toBe(keys.length);

    const waiting = keys.filter((_, i) => i % 2 === 0);
    for (const k of waiting) await expect.poll(() => client.status(local.runIdOf(k)), { timeout: 20_000 }).toMatchObject({ state: "pending", step: 1 });
    const viaClient = client.group("local-1");
    await expect.poll(async () => (await viaClient.status())?.succeeded, { timeout: 20_000 }).toBe(5);
    expect(await viaClient.status()).toMatchObject({ total: 12, unsubmitted: 0, pending: 6, running: 0, succeeded: 5, failed: 1 });
    const listed = (await viaClient.members())!;
    expect(listed.map((m) => [m.key, m.runId, m.shard])).toEqual(keys.map((k) => [k, local.runIdOf(k), HOME]));

    const streamed = (async () => {
      const got = [];
      for await (const r of viaClient.results()) got.push(r);
      return got;
    })();
    streamed.catch(() => undefined);
    const [cancelled, ...signalled] = waiting;
    expect(await client.cancel(local.runIdOf(cancelled!))).toBe(true);
    for (const k of signalled) expect(await client.signal(`pay:${local.runIdOf(k)}`, enc.encode(`paid ${k}`))).toBe("delivered");
    expect((await client.wait(local.runIdOf(cancelled!))).termination.status).toBe("cancelled");
    for (const k of signalled) expect(dec.decode((await client.wait(local.runIdOf(k))).outcome!.result!)).toBe(`paid ${k}`);

    const all = await streamed;
    expect(all.map((r) => r.key).sort()).toEqual([...keys].sort());
    expect(all.find((r) => r.key === cancelled)).toMatchObject({ status: "cancelled", runId: local.runIdOf(cancelled!) });
    expect(all.find((r) => r.key === "m3")).toMatchObject({ status: "failed", error: "bad m3" });
    expect(await viaClient.status()).toMatchObject({ total: 12, pending: 0, running: 0, succeeded: 10, failed: 1, cancelled: 1 });
    const row = (await client.listGroups()).groups.find((g) => g.groupId === "local-1");
    expect(row?.members).toEqual({ total: 12, active: 0, succeeded: 10, failed: 1, cancelled: 1 });
    // The runtime's own view agrees.
    expect(await local.status()).toMatchObject({ succeeded: 10, failed: 1, cancelled: 1 });
  }, 60_000);

  it("forget removes a group from every shard, refusing while a member runs, and a second forget finds nothing", async () => {
    const { store, client } = await setUp();
    const group = client.group("gone-1");
    const keys = keysOnEveryShard("gone-1", 16);
    const waiter = keys[0]!;
    await group.submit(keys.map((k) => ({ key: k, input: json(k === waiter ? { wait: `pay:${group.runIdOf(k)}` } : { k }) })));
    await expect.poll(async () => (await group.status())?.succeeded, { timeout: 20_000 }).toBe(15);
    const before = await countObjects(store);
    await expect(group.forget()).rejects.toMatchObject({ name: "GroupActiveError" });
    expect(await countObjects(store), "a refused removal writes nothing").toBe(before);
    expect(await group.status()).toMatchObject({ total: 16, succeeded: 15 });

    expect(await client.signal(`pay:${group.runIdOf(waiter)}`, enc.encode("paid"))).toBe("delivered");
    expect((await group.join()).map((r) => r.status)).toEqual(keys.map(() => "succeeded"));
    expect(await group.forget()).toBe(true);
    expect(await group.status()).toBeNull();
    expect(await group.members()).toBeNull();
    expect((await client.listGroups()).groups.map((g) => g.groupId)).not.toContain("gone-1");
    for (const k of keys) {
      expect(await client.status(group.runIdOf(k)), `member ${k}'s run is gone from its shard`).toBeNull();
      expect(await client.inspectRun(group.runIdOf(k))).toBeNull();
    }
    expect(await group.forget()).toBe(false);
    // The id is free again: a new group under it starts from nothing.
    expect((await group.submit([{ key: waiter, input: json({ again: true }) }])).submitted).toBe(1);
    expect(await group.status()).toMatchObject({ total: 1 });
  }, 60_000);

  it("retention removes a group from every shard once a client read every result and the window passed", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    const clock = new MockClock();
    const owners = await Promise.all(
      Array.from({ length: SHARDS }, async (_, i) => {
        const queue = await Queue.open(store, shardStoreName("app", i), { flushIntervalMs: 1 });
        const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).groupRetention(60_000).clock(clock).build();
        const worker = runtime.spawn();
        const inbox = serveClients(queue, runtime, { store, listIntervalMs: 20 });
        return { runtime, stop: async () => (await inbox.stop(), await worker.shutdown(), await queue.close()) };
      }),
    );
    open.push({ close: async () => void (await Promise.all(owners.map((o) => o.stop()))) });
    const client = await TaqubaClient.open(store, { name: "app", queueName: STEP_QUEUE, pollIntervalMs: 200 });
    open.push(client);
    const group = client.group("kept-1");
    const keys = keysOnEveryShard("kept-1", 16);
    await group.submit(keys.map((k) => ({ key: k, input: json({ k }) })));
    const sweepAll = async () => (await Promise.all(owners.map((o) => o.runtime.sweepGroups()))).reduce((a, b) => a + b, 0);
    // Ended, but no client read the results yet: the sweep keeps the group however long it waits.
    await expect.poll(async () => (await group.status())?.succeeded, { timeout: 20_000 }).toBe(16);
    clock.advance(3_600_000);
    expect(await sweepAll()).toBe(0);
    expect(await group.status()).toMatchObject({ succeeded: 16 });

    expect(await group.join()).toHaveLength(16);
    // Each shard's owner starts its window when it applies the request; within the window the sweep keeps the group.
    await expect.poll(sweepAll, { timeout: 10_000 }).toBe(0);
    expect(await group.status()).toMatchObject({ succeeded: 16 });
    await expect
      .poll(
        async () => {
          clock.advance(60_001);
          await sweepAll();
          return (await client.listGroups()).groups.length === 0 && (await group.status()) === null;
        },
        { timeout: 20_000 },
      )
      .toBe(true);
    for (const k of keys) expect(await client.status(group.runIdOf(k))).toBeNull();
  }, 60_000);

  it("a group read to its end many times leaves one retention request per shard in an inbox no owner serves yet", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    const clock = new MockClock();
    const owners = await Promise.all(
      Array.from({ length: SHARDS }, async (_, i) => {
        const queue = await Queue.open(store, shardStoreName("app", i), { flushIntervalMs: 1 });
        const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).groupRetention(60_000).clock(clock).build();
        const worker = runtime.spawn();
        const owner = {
          runtime,
          inbox: serveClients(queue, runtime, { store, listIntervalMs: 20 }) as ReturnType<typeof serveClients> | undefined,
          serve: () => (owner.inbox = serveClients(queue, runtime, { store, listIntervalMs: 20 })),
          stop: async () => (await owner.inbox?.stop(), await worker.shutdown(), await queue.close()),
        };
        return owner;
      }),
    );
    open.push({ close: async () => void (await Promise.all(owners.map((o) => o.stop()))) });
    const client = await TaqubaClient.open(store, { name: "app", queueName: STEP_QUEUE, pollIntervalMs: 200 });
    open.push(client);
    const group = client.group("read-often");
    const keys = keysOnEveryShard("read-often", 12);
    await group.submit(keys.map((k) => ({ key: k, input: json({ k }) })));
    await expect.poll(async () => (await group.status())?.succeeded, { timeout: 20_000 }).toBe(12);

    // No owner serves clients now (stopped, or not started yet): every read to the end posts to them.
    for (const o of owners) {
      await o.inbox!.stop();
      o.inbox = undefined;
    }
    const waiting = async (i: number) => {
      const prefix = `${shardStoreName("app", i)}/inbox/${STEP_QUEUE}/requests/`;
      const names: string[] = [];
      for await (const o of store.list(prefix)) if (!o.key.endsWith("~keep")) names.push(o.key.slice(prefix.length));
      return names;
    };
    for (let read = 0; read < 5; read++) expect(await group.join()).toHaveLength(12);
    for (let i = 0; i < SHARDS; i++) expect(await waiting(i), `requests waiting on shard ${i}`).toHaveLength(1);

    // Served again, each shard applies its one request: the group is kept through the window, then removed.
    for (const o of owners) o.serve();
    await expect.poll(async () => (await Promise.all(owners.map((_, i) => waiting(i)))).flat().length, { timeout: 10_000 }).toBe(0);
    expect(owners.reduce((n, o) => n + o.inbox!.stats.applied, 0)).toBe(SHARDS);
    const sweepAll = async () => (await Promise.all(owners.map((o) => o.runtime.sweepGroups()))).reduce((a, b) => a + b, 0);
    expect(await sweepAll()).toBe(0);
    clock.advance(60_001);
    await sweepAll();
    expect(await group.status()).toBeNull();
    await expect(group.join()).rejects.toMatchObject({ name: "GroupNotFoundError" });
  }, 60_000);

  it("refuses a removal or retention request with an absurd creation time, changing nothing", async () => {
    const { store, client } = await setUp();
    const group = client.group("kept-2");
    await group.submit([{ key: "a", input: json({ k: "a" }) }]);
    await group.join();
    const home = stableHash("kept-2") % SHARDS;
    for (const op of ["groupForget", "groupRetain"] as const) {
      await expect(applyRaw(store, home, { op, groupId: "kept-2", createdAtMs: 1e30, manifest: true })).rejects.toThrow(/createdAtMs/);
    }
    expect(await group.status()).toMatchObject({ total: 1, succeeded: 1 });
  }, 60_000);

  it("counts members a cut-short submission left out as unsubmitted, and resume submits them", async () => {
    const { store, client } = await setUp();
    const group = client.group("cut-short");
    const keys = keysOnEveryShard("cut-short", 16);
    await group.submit(keys.slice(0, 4).map((k) => ({ key: k, input: json({ k }) })));
    // A client that died after its manifest request: the rest are in the manifest, on no shard.
    const createdAtMs = await applyRaw(store, stableHash("cut-short") % SHARDS, {
      op: "groupManifest",
      groupId: "cut-short",
      members: keys.slice(4).map((k) => ({ key: k, input: json({ k }) })),
    });
    expect(typeof createdAtMs).toBe("number");
    expect(await group.status()).toMatchObject({ total: 16, unsubmitted: 12 });
    expect((await group.members())!.filter((m) => m.state === "unsubmitted").map((m) => m.key)).toEqual(keys.slice(4));
    const resumed = await group.resume();
    expect(resumed.submitted).toBe(12);
    expect((await group.join()).map((r) => r.status)).toEqual(keys.map(() => "succeeded"));
  }, 60_000);

  it("a member request applied again after its owner crashed runs no member twice", async () => {
    const { store, shards, client } = await setUp();
    const group = client.group("replayed");
    const key = "m0";
    const runId = group.runIdOf(key);
    const shard = group.shardOf(key);
    await group.submit([{ key, input: json({ fail: "first and only" }) }]);
    expect((await group.join())[0]).toMatchObject({ status: "failed" });
    // The owner applied the request and failed before its mark and answer (the mark is gone): the request is back in the inbox.
    const createdAtMs = (await client.listGroups()).groups[0]!.createdAtMs;
    const request: InboxRequest = { op: "groupMembers", groupId: "replayed", createdAtMs, members: [{ key, input: json({ fail: "first and only" }) }] };
    const id = ulid();
    expect(await applyRaw(store, shard, request, id)).toEqual([]);
    // Same request id again with its mark removed: the owner applies it afresh and still leaves the ended member alone.
    await shards.owners[shard]!.queue.kvDelete(appliedKey(STEP_QUEUE, id));
    expect(await applyRaw(store, shard, request, id)).toEqual([]);
    const history = await client.inspectRun(runId);
    expect(history).not.toBeNull();
    expect((await client.status(runId))?.state).toBe("terminated");
    expect(await group.status()).toMatchObject({ failed: 1, pending: 0, running: 0 });
    // The run still has its one submission: one attempt of step 0.
    expect(history!.steps[0]!.attempts).toHaveLength(1);
  }, 60_000);

  it("refuses a member request whose creation time is not the manifest's, or whose group has none, writing nothing", async () => {
    const { store, client } = await setUp();
    const group = client.group("dated");
    await group.submit([{ key: "m0", input: json({ k: 0 }) }]);
    const createdAtMs = (await client.listGroups()).groups[0]!.createdAtMs;
    // A member the manifest would not date: on a shard other than the home one too, which holds no manifest.
    const byShard = new Map<number, string>();
    for (let i = 1; byShard.size < SHARDS; i++) if (!byShard.has(group.shardOf(`m${i}`))) byShard.set(group.shardOf(`m${i}`), `m${i}`);
    const keys = [...byShard.values()];
    const before = await snapshot(store);
    for (const key of keys) {
      const shard = group.shardOf(key);
      for (const wrongAtMs of [createdAtMs + 1, createdAtMs - 1, 0, Number.NaN, 1e30]) {
        const request: InboxRequest = { op: "groupMembers", groupId: "dated", createdAtMs: wrongAtMs, members: [{ key, input: json({ key }) }] };
        const refused = rebuildError(await answerError(store, shard, request));
        expect(refused, `${key} at ${wrongAtMs}`).toBeInstanceOf(GroupRecreatedError);
        expect(refused).toMatchObject({ code: "GROUP_RECREATED", groupId: "dated", createdAtMs: wrongAtMs, manifestCreatedAtMs: createdAtMs });
        expect((refused as Error).message).toContain('run group "dated"');
        expect((refused as Error).message).toContain("submit the members again");
      }
      const none: InboxRequest = { op: "groupMembers", groupId: "never-made", createdAtMs, members: [{ key, input: json({ key }) }] };
      expect(rebuildError(await answerError(store, shard, none))).toMatchObject({ name: "GroupNotFoundError", code: "GROUP_NOT_FOUND", groupId: "never-made" });
    }
    // No member, run, index entry or commit: only the inbox's own objects changed.
    expect(await snapshot(store)).toEqual(before);
    for (const key of keys) expect(await client.status(group.runIdOf(key)), key).toBeNull();
    expect((await client.listGroups()).groups.map((g) => [g.groupId, g.createdAtMs])).toEqual([["dated", createdAtMs]]);
    expect(await group.status()).toMatchObject({ total: 1, unsubmitted: 0 });
  }, 60_000);

  it("refuses a bad group id or members before writing anything", async () => {
    const { store, client } = await setUp();
    const before = await countObjects(store);
    expect(() => client.group("")).toThrow(ValidationError);
    await expect(
      client.group("g").submit([
        { key: "a", input: json(1) },
        { key: "a", input: json(2) },
      ]),
    ).rejects.toThrow(ValidationError);
    await expect(client.group("g").submit([{ key: "a", input: "x" as unknown as Uint8Array }])).rejects.toThrow(ValidationError);
    expect(await countObjects(store)).toBe(before);
    await expect(client.group("nothing").resume()).rejects.toMatchObject({ name: "GroupNotFoundError" });
    expect(await client.group("nothing").status()).toBeNull();
    expect(await client.group("nothing").members()).toBeNull();
  }, 30_000);
});

async function countObjects(store: ObjectStore): Promise<number> {
  let n = 0;
  for await (const o of store.list("")) if (!o.key.includes("/lease/")) n++;
  return n;
}

/** Every object but the inbox's and the leases', with its bytes. */
async function snapshot(store: ObjectStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const o of store.list("")) {
    if (o.key.includes("/inbox/") || o.key.includes("/lease/")) continue;
    out.set(o.key, Buffer.from((await store.get(o.key))!.body).toString("base64"));
  }
  return out;
}

/** Writes `request` into shard `shard`'s inbox and resolves with the error the owner answered (fails if it answered a value). */
async function answerError(store: ObjectStore, shard: number, request: InboxRequest): Promise<AnsweredError> {
  const id = ulid();
  const base = `${shardStoreName("app", shard)}/`;
  await store.put(`${base}${requestKey(STEP_QUEUE, id)}`, encodeRequest(request));
  let body: Uint8Array | undefined;
  await expect.poll(async () => (body = (await store.get(`${base}${answerKey(STEP_QUEUE, id)}`))?.body) !== undefined, { timeout: 10_000 }).toBe(true);
  const a = decodeAnswer(body!);
  if (a.ok) throw new Error(`expected a refusal, got ${JSON.stringify(a.value)}`);
  return a.error;
}

/** Writes `request` into shard `shard`'s inbox as a client would, and waits for the owner's answer. */
async function applyRaw(store: ObjectStore, shard: number, request: InboxRequest, id = ulid()): Promise<AnswerValue> {
  const base = `${shardStoreName("app", shard)}/`;
  await store.put(`${base}${requestKey(STEP_QUEUE, id)}`, encodeRequest(request));
  let answer: Uint8Array | undefined;
  await expect
    .poll(
      async () => {
        answer = (await store.get(`${base}${answerKey(STEP_QUEUE, id)}`))?.body;
        return answer !== undefined;
      },
      { timeout: 10_000 },
    )
    .toBe(true);
  const a = decodeAnswer(answer!);
  if (!a.ok) throw new Error(a.error.message);
  return a.value;
}

describe("job groups across shards", () => {
  async function openJobOwner(store: ObjectStore, name: string) {
    const queue = await Queue.open(store, name, { flushIntervalMs: 1 });
    const runner = JobRunner.builder(queue, store)
      .queueName(STEP_QUEUE)
      .logger({ error: () => undefined })
      .register(keyedEmailJob, {
        async run(input, ctx) {
          if (input.to.startsWith("blocked@")) ctx.fail({ reason: "blocked" });
          return { message_id: `m-${input.to}` };
        },
      })
      .build();
    const worker = runner.spawn();
    const inbox = serveClients(queue, runner, { store, listIntervalMs: 20 });
    return {
      async stop() {
        await inbox.stop();
        await worker.shutdown();
        await queue.close();
      },
    };
  }

  it("submits jobs onto every shard, joins typed results in submission order, and lists the group once", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    const owners = await Promise.all(Array.from({ length: SHARDS }, (_, i) => openJobOwner(store, shardStoreName("app", i))));
    open.push({ close: async () => void (await Promise.all(owners.map((o) => o.stop()))) });
    const client = await TaqubaClient.open(store, { name: "app", queueName: STEP_QUEUE, pollIntervalMs: 200 });
    open.push(client);
    const jobs = client.jobGroup("mail-1", keyedEmailJob);
    const inputs = Array.from({ length: 20 }, (_, i) => ({ to: `${i === 7 ? "blocked" : `u${i}`}@x.io` }));
    expect(new Set(inputs.map((x, i) => shardOfRun(jobs.jobIdOf(jobs.keyOf(x, i)), SHARDS))).size).toBe(SHARDS);
    await expect(jobs.submit([{ to: "not-an-address" }])).rejects.toThrow(ValidationError);
    expect((await jobs.submit(inputs, { headers: { tenant_id: "t" } })).submitted).toBe(20);
    const results = await jobs.join();
    expect(results.map((r) => r.key)).toEqual(inputs.map((x, i) => jobs.keyOf(x, i)));
    for (const [i, r] of results.entries()) {
      if (i === 7) expect(r).toMatchObject({ outcome: { status: "failed", error: { reason: "blocked" } }, kind: "runner" });
      else expect(r.outcome).toEqual({ status: "succeeded", output: { message_id: `m-u${i}@x.io` } });
    }
    expect(await jobs.status()).toMatchObject({ total: 20, succeeded: 19, failed: 1 });
    const page = await client.listGroups();
    expect(page.groups).toHaveLength(1);
    expect(page.groups[0]).toMatchObject({ groupId: "mail-1", members: { total: 20, succeeded: 19, failed: 1, active: 0 } });
    expect((await client.listJobs({ job: keyedEmailJob.name, limit: 1000 })).runs).toHaveLength(20);
  }, 60_000);

  it("a job group's members on every shard carry their definition's flow rule, on submit and on resume", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    // Owners that serve the inbox and run nothing: every member stays pending, as submitted.
    const owners = await Promise.all(
      Array.from({ length: SHARDS }, async (_, i) => {
        const queue = await Queue.open(store, shardStoreName("app", i), { flushIntervalMs: 1 });
        const runner = JobRunner.builder(queue, store)
          .queueName(STEP_QUEUE)
          .register(tenantLimitedJob, { run: async (input) => ({ message_id: input.to }) })
          .build();
        const inbox = serveClients(queue, runner, { store, listIntervalMs: 20 });
        return { queue, runner, inbox };
      }),
    );
    open.push({
      close: async () => {
        for (const o of owners) {
          await o.inbox.stop();
          await o.queue.close();
        }
      },
    });
    const pendingOf = async () => (await Promise.all(owners.map(async (o) => (await o.queue.view().listJobs(STEP_QUEUE, "pending")).items))).flat();
    const client = await TaqubaClient.open(store, { name: "app", queueName: STEP_QUEUE, pollIntervalMs: 200 });
    open.push(client);
    const jobs = client.jobGroup("tenant-mail", tenantLimitedJob);
    const inputs = Array.from({ length: 12 }, (_, i) => ({ to: `u${i}@x.io` }));
    expect(new Set(inputs.map((x, i) => shardOfRun(jobs.jobIdOf(jobs.keyOf(x, i)), SHARDS))).size).toBe(SHARDS);
    // A missing key value is refused before anything is written.
    await expect(jobs.submit(inputs, { headers: {} })).rejects.toBeInstanceOf(ValidationError);
    expect(await jobs.status()).toBeNull();
    expect((await jobs.submit(inputs.slice(0, 8), { headers: { tenant_id: "acme" } })).submitted).toBe(8);
    const flow = { [FLOW_RULE_HEADER]: tenantLimitedJob.name, [FLOW_CONCURRENCY_KEY_HEADER]: "acme" };
    let pending = await pendingOf();
    expect(pending).toHaveLength(8);
    for (const job of pending) expect(job.headers).toMatchObject(flow);

    // A client that died after its manifest request (with the options the submission prepared): resume submits the rest with the flow rule.
    await applyRaw(store, stableHash("tenant-mail") % SHARDS, {
      op: "groupManifest",
      groupId: "tenant-mail",
      members: inputs.slice(8).map((x, i) => ({ key: jobs.keyOf(x, 8 + i), input: encodeJobPayload(tenantLimitedJob.name, x) })),
    });
    expect(await jobs.status()).toMatchObject({ total: 12, unsubmitted: 4 });
    expect((await jobs.resume()).submitted).toBe(4);
    pending = await pendingOf();
    expect(pending).toHaveLength(12);
    for (const job of pending) expect(job.headers).toMatchObject(flow);
  }, 60_000);
});
