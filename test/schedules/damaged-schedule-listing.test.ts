/**
 * @module `runtime.schedules.list()` over many schedules of which one has a
 * damaged record (bytes that are no record, a tick time past the last
 * instant a `Date` holds): the listing holds every healthy schedule, and
 * names the damaged one in its `unreadable` with the error that says how
 * to clear it, and logs it. Before, the one record threw out of the
 * listing and hid every other schedule. Over a local directory and over S3
 * (s3rver on loopback).
 */
import { pack, unpack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, NoopTerminalHook, type ObjectStore, Queue, S3Store, StepOutcome, StoreCorruptedError, WorkflowRuntime } from "taquba";
import { scheduleKey } from "../../runtime/workflow/schedules/schedule-record.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { enc } from "../workflow/helpers.js";

const T0 = Date.parse("2026-01-05T00:00:30Z");
const tempDir = useTempDirs("schedule-listing-");
const server = useS3Server();
const COUNT = 40;
const ids = Array.from({ length: COUNT }, (_, i) => `s${String(i).padStart(2, "0")}`);

const DAMAGE: [string, (bytes: Uint8Array) => Uint8Array, RegExp][] = [
  ["bytes that are no record", () => new Uint8Array([0xc1, 0x00]), /the record of schedule "s17" is no schedule record \(not MessagePack/],
  [
    "a last tick time past the last instant a Date holds",
    (bytes) => pack({ ...(unpack(bytes) as Record<string, unknown>), lastTickMs: 8.64e15 + 1 }),
    /the record of schedule "s17" has a last tick time of 8640000000000001, outside its range/,
  ],
];

const STORES: [string, () => Promise<ObjectStore>][] = [
  ["a local directory", async () => new LocalStore(await tempDir())],
  ["S3", async () => new S3Store({ bucket: server.bucket, prefix: `listing-${Math.random().toString(36).slice(2)}`, clientConfig: server.clientConfig })],
];

describe("the runtime's listing of schedules with one damaged record among many", () => {
  for (const [where, open] of STORES) {
    for (const [what, damage, says] of DAMAGE) {
      it(`lists the others and names the damaged one (${what}, over ${where})`, async () => {
        const store = await open();
        const queue = await Queue.open(store, "app", { clock: new MockClock(T0), flushIntervalMs: 1 });
        try {
          const logged: { schedule?: string; err?: unknown }[] = [];
          const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook)
            .logger({ error: (o) => logged.push(o as { schedule?: string }) })
            .build();
          for (const id of ids) await runtime.schedules.upsert({ id, cron: "* * * * *", run: { input: enc(id) } });
          const key = scheduleKey("workflow-steps", "s17");
          await queue.kvPut(key, damage((await queue.kvGet(key))!));

          const listed = await runtime.schedules.list();
          expect(listed.map((s) => s.id)).toEqual(ids.filter((id) => id !== "s17"));
          expect(listed.every((s) => s.nextTickMs === T0 + 30_000)).toBe(true);
          expect(listed.unreadable.map((u) => u.id)).toEqual(["s17"]);
          const err = listed.unreadable[0]!.error;
          expect(err).toBeInstanceOf(StoreCorruptedError);
          expect(err.message).toMatch(says);
          expect(err.message).toContain('remove it with schedules.remove("s17")');
          expect(logged.filter((o) => o.schedule === "s17")).toHaveLength(1);
          // The contract's shape: an array of the healthy ones; JSON text holds them only.
          expect(Array.isArray(listed)).toBe(true);
          expect(JSON.parse(JSON.stringify(listed))).toHaveLength(COUNT - 1);
          await expect(runtime.schedules.get("s17")).rejects.toBeInstanceOf(StoreCorruptedError);

          // The way out: remove it, upsert it again; the listing is whole and names nothing.
          expect(await runtime.schedules.remove("s17")).toBe(true);
          await runtime.schedules.upsert({ id: "s17", cron: "* * * * *", run: { input: enc("s17") } });
          const again = await runtime.schedules.list();
          expect(again.map((s) => s.id)).toEqual(ids);
          expect(again.unreadable).toEqual([]);
        } finally {
          await queue.close();
        }
      });
    }
  }
});
