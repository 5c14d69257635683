/**
 * @module Engine keys built once and handed on: a chained claim's record
 * and index keys go from its insert to its settlement, the stats key is one
 * string per queue, and caller KV keys in use are validated and prefixed
 * once (queue/user-keys). What is stored and what is refused stay as they
 * were.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, SettlementEffects, ValidationError } from "taquba";
import type { ClaimNext } from "../../runtime/queue/types.js";
import { statsKey } from "../../runtime/queue/keys.js";
import { keptEngineKey, keptUserEngineKey } from "../../runtime/queue/user-keys.js";
import { stageOwnedPut } from "../../runtime/queue/effects.js";
import { ownedBytes } from "../../runtime/queue/owned-bytes.js";
import { Engine } from "../../runtime/engine/engine.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { enc, openQueue } from "./helpers.js";
import { testRandom } from "../support/seed.js";

const claimNext = (): ClaimNext => ({ index: 0, reserve: () => true });

describe("engine keys built once", () => {
  it("a chain of claimed inserts, each acked by the next, leaves no record, index entry or count behind", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store });
    await queue.enqueue("steps", enc("0"));
    let job = (await queue.claim("steps"))!;
    const ids = [job.id];
    for (let i = 1; i <= 5; i++) {
      job = (await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc(String(i))), claimNext())).next!;
      ids.push(job.id);
      expect((await queue.view().listJobs("steps", "claimed")).items.map((j) => j.id)).toEqual([job.id]);
    }
    await queue.ack(job);
    for (const id of ids) expect(await queue.view().job(id)).toBeNull();
    expect((await queue.view().listJobs("steps", "claimed")).items).toEqual([]);
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 0, done: 6 });
    await queue.close();
    // Nothing of the jobs left in the engine: no record, no index entry, no history.
    const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
    const left = [...engine.scan()].map(([k]) => k).filter((k) => ids.some((id) => k.includes(id)));
    await engine.close();
    expect(left).toEqual([]);
  });

  it("gives each queue its stats key", () => {
    for (let i = 0; i < 3000; i++) expect(statsKey(`q${i % 1500}`)).toBe(`n/q${i % 1500}`);
  });

  it("gives each queue its stats key when calls repeat one queue, alternate two, or name queues alike in content and not in object", () => {
    const names = ["a", "b", "", "a/b", "\u00e9", "\u{1F600}", "ab", "__proto__"];
    const r = testRandom("stats keys");
    let last = "";
    for (let i = 0; i < 5000; i++) {
      // The last call's queue again, any of the names, two alternating, or a name built anew (an equal string, another object).
      const pick = r.int(4);
      const name =
        pick === 0
          ? last
          : pick === 1
            ? names[r.int(names.length)]!
            : pick === 2
              ? ["a", "b"][i % 2]!
              : `${names[r.int(names.length)]!}${"x".repeat(r.int(2))}`;
      expect(statsKey(name)).toBe(`n/${name}`);
      last = name;
    }
  });

  it("maps each caller key to its engine key while keys come and go, and refuses what validateKvKey refuses", () => {
    // Keys used again after one and two generations of others: each still maps to its own engine key.
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2500; i++) {
        const key = `k/${i % (700 + round * 900)}`;
        expect(i % 3 === 0 ? keptUserEngineKey(key) : (keptEngineKey(key) ?? `u/${key}`)).toBe(`u/${key}`);
      }
    }
    for (const bad of ["", "\ud800", "x".repeat(1025), 7 as unknown as string]) {
      expect(() => keptUserEngineKey(bad)).toThrow(ValidationError);
      // Never kept: refused again.
      expect(keptEngineKey(bad)).toBeUndefined();
      expect(() => keptUserEngineKey(bad)).toThrow(ValidationError);
    }
  });

  it("kvGetNow and stageOwnedPut refuse invalid keys as before", async () => {
    const { queue } = await openQueue();
    expect(() => queue.kvGetNow("")).toThrow(ValidationError);
    expect(() => stageOwnedPut(new SettlementEffects(), "\udfff", ownedBytes(new Uint8Array(1)))).toThrow(ValidationError);
    await queue.kvPut("a/b", enc("v"));
    expect(queue.kvGetNow("a/b")).toEqual(enc("v"));
    await queue.close();
  });
});
