/**
 * @module The lease registry against a model, over random claims, renewals,
 * removals and reaps with lease durations from 0 to 2^31 ms and 1e13 ms,
 * fractional expiries, many leases expiring at the same instant, and a clock
 * that goes back as well as forward: `expired` hands out exactly the leases
 * due, earliest first, and `nextExpiry` is the earliest live one.
 */
import { describe, expect, it } from "vitest";
import { type LeaseEntry, LeaseRegistry } from "../../runtime/queue/lease-registry.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom } from "../support/seed.js";

describe("LeaseRegistry against a model", () => {
  it("expired() and nextExpiry() agree with the model through every step", { timeout: HEAVY_TEST_MS }, () => {
    for (let seed = 0; seed < 12; seed++) {
      const r = testRandom(`lease registry model ${seed}`);
      const reg = new LeaseRegistry();
      const model = new Map<string, number>();
      let now = 1_000;
      const made: LeaseEntry[] = [];
      const wrongHolds: string[] = [];
      // Many the same: leases taken in one instant expire together.
      const durations = [0, 1, 2 ** 31, 1e13, 5, 5, 5];
      for (let step = 0; step < 4000; step++) {
        const op = r.int(10);
        const id = `j${r.int(2000)}`;
        if (op < 4) {
          const at = now + durations[r.int(durations.length)]! + (r.int(2) === 0 ? 0.5 : 0);
          reg.add(id, "q", at, false);
          model.set(id, at);
        } else if (op < 6) {
          const e = reg.get(id);
          if (e !== undefined) {
            const at = now + durations[r.int(durations.length)]!;
            reg.extend(e, at);
            // A renewal never shortens a lease.
            if (at > model.get(id)!) model.set(id, at);
          }
        } else if (op < 8) {
          reg.remove(id);
          model.delete(id);
        } else if (op < 9) {
          now += r.int(3) === 0 ? -r.int(100) : r.int(100);
        } else {
          const limit = 1 + r.int(50);
          const got = reg.expired(now, limit).map((e) => [e.id, e.expiresAt] as const);
          const due = [...model.values()].filter((t) => t <= now).sort((a, b) => a - b);
          expect(got.length).toBe(Math.min(limit, due.length));
          expect(got.map(([, t]) => t)).toEqual(due.slice(0, got.length));
          for (const [gid, t] of got) expect(model.get(gid)).toBe(t);
          // The reaper ends some of them.
          for (const [gid] of got.slice(0, got.length >> 1)) {
            reg.remove(gid);
            model.delete(gid);
          }
        }
        // An entry is held (`holdsEntry`) exactly while the map look-up finds it (`holds`), and only under its own id.
        const live = reg.get(id);
        if (live !== undefined) made.push(live);
        if (made.length > 0) {
          // Tallied, not an expect per step: the walk is long.
          const e = made[r.int(made.length)]!;
          if (reg.holdsEntry(e, e.id) !== (reg.holds(e.id, e.token) === e) || reg.holdsEntry(e, `${e.id}x`)) wrongHolds.push(`${e.id}#${e.token}`);
        }
        const earliest = [...model.values()].reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
        expect(reg.nextExpiry() ?? Number.POSITIVE_INFINITY).toBe(earliest);
        expect(reg.size).toBe(model.size);
      }
      expect(wrongHolds).toEqual([]);
    }
  });
});
