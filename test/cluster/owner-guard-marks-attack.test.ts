/**
 * @module An owner's guarded store (`OwnerTerm.guard`, what a sharded
 * worker opens its queue on) passes each put straight to the store it
 * guards, so it must declare what that store declared: a LocalStore's puts
 * contend with each other (the engine then releases a slow WAL object's
 * commits at once instead of by groups) and it is done with a put's body
 * once the put settles (the engine then reuses its buffers). Without the
 * marks, a queue opened through the guard on a LocalStore switched its
 * release to groups under a busy disk, about doubling its puts per step.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, withLatency, type ObjectStore } from "taquba";
import { putBodyReleased } from "../../runtime/store/put-body.js";
import { putsContend } from "../../runtime/store/put-contention.js";
import { startedTerm } from "../support/owner-election.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-owner-guard-");

/** The store as `guard` returns it from the term of an election won over `store`. */
async function guarded(store: ObjectStore): Promise<ObjectStore> {
  const { election, term } = await startedTerm(store);
  const out = term.guard(store);
  await election.stop();
  return out;
}

describe("an owner's guarded store declares what the store it guards declared", () => {
  it("over a LocalStore: puts contend and bodies are released", async () => {
    const store = await guarded(new LocalStore(await tempDir()));
    expect(putsContend(store)).toBe(true);
    expect(putBodyReleased(store)).toBe(true);
  });

  it("over a MemoryStore (which keeps lent bodies) its bodies are not released and its puts overlap; behind withLatency neither is claimed for the latency's puts", async () => {
    const memory = await guarded(new MemoryStore());
    expect(putsContend(memory)).toBe(false);
    expect(putBodyReleased(memory)).toBe(false);
    const slow = await guarded(withLatency(new LocalStore(await tempDir()), { ms: 1 }));
    expect(putsContend(slow)).toBe(false);
  });
});
