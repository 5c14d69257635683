/**
 * @module Which generated ids the queue looks up before handing one out
 * (`CallerIdBound`), over a real engine: a caller's job holding a
 * far-future ULID must not send every later draw to a lookup, and no id a
 * job holds, or a caller's enqueue is about to commit, may be handed out
 * without one. The draws count up by one from a fixed id, as ids drawn
 * within one millisecond do.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { CallerIdBound } from "../../runtime/queue/caller-id-bound.js";
import { jobKey } from "../../runtime/queue/keys.js";
import { nextUlid, ulidAfter } from "../support/next-ulid.js";

const START = "01JEQ000000000000000000000";
/** A ULID of the year 10889, the greatest time a ULID holds. */
const FAR_FUTURE = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ";

async function engineHolding(ids: readonly string[]): Promise<Engine> {
  const engine = await Engine.open(new MemoryStore());
  const b = new WriteBatch();
  for (const id of ids) b.put(jobKey(id), new Uint8Array([1]));
  if (ids.length > 0) await engine.commit(b);
  return engine;
}

/** The engine's `has`, counting its calls: the lookups the bound sends draws to. */
function countLookups(engine: Engine): { count: number } {
  const counted = { count: 0 };
  const has = engine.has.bind(engine);
  engine.has = (key: string) => {
    counted.count++;
    return has(key);
  };
  return counted;
}

/** `freshJobId`'s loop over draws counting up from `from`: the ids handed out, `n` of them. */
function drawFrom(bound: CallerIdBound, engine: Engine, from: string, n: number): string[] {
  const out: string[] = [];
  let id = from;
  while (out.length < n) {
    if (!(bound.mayHold(id) && engine.has(jobKey(id)))) out.push(id);
    id = nextUlid(id);
  }
  return out;
}

describe("CallerIdBound", () => {
  it("a far-future caller id held at open costs a scan, not a lookup at every draw", async () => {
    const engine = await engineHolding([FAR_FUTURE]);
    const bound = CallerIdBound.of(engine);
    const lookups = countLookups(engine);
    const ids = drawFrom(bound, engine, START, 1000);
    expect(ids).toEqual(Array.from({ length: 1000 }, (_, i) => ulidAfter(START, i)));
    expect(lookups.count).toBe(0);
    await engine.close();
  });

  it("a far-future caller id enqueued after open, and ids held between the draws and it, are each passed over", async () => {
    const held = [ulidAfter(START, 5), ulidAfter(START, 6), ulidAfter(START, 40)];
    const engine = await engineHolding(held);
    const bound = CallerIdBound.of(engine);
    bound.note(FAR_FUTURE);
    const lookups = countLookups(engine);
    const ids = drawFrom(bound, engine, START, 100);
    expect(ids.filter((id) => held.includes(id))).toEqual([]);
    expect(ids).toHaveLength(100);
    expect(ids.at(-1)).toBe(ulidAfter(START, 102));
    // One lookup per held id reached, none for the draws between.
    expect(lookups.count).toBe(held.length);
    await engine.close();
  });

  it("a caller id noted between two draws, above them, is looked up when the draws reach it, committed or not", async () => {
    const engine = await engineHolding([FAR_FUTURE]);
    const bound = CallerIdBound.of(engine);
    expect(drawFrom(bound, engine, START, 3)).toEqual([START, ulidAfter(START, 1), ulidAfter(START, 2)]);
    // Noted before its commit; later draws scan the keys (which lack it) before it commits.
    const taken = ulidAfter(START, 10);
    bound.note(taken);
    expect(bound.mayHold(ulidAfter(START, 3))).toBe(false);
    await engine.commit(new WriteBatch().put(jobKey(taken), new Uint8Array([1])));
    const ids = drawFrom(bound, engine, ulidAfter(START, 4), 10);
    expect(ids).not.toContain(taken);
    expect(ids.at(-1)).toBe(ulidAfter(START, 14));
    await engine.close();
  });

  it("a noted id whose commit lands after scans that missed it is still passed over, however many scans came between", async () => {
    const engine = await engineHolding([FAR_FUTURE]);
    const bound = CallerIdBound.of(engine);
    bound.mayHold(START);
    const slow = ulidAfter(START, 50);
    bound.note(slow);
    // Other caller ids, each committed, make the draws scan again before `slow` commits.
    for (const n of [3, 7, 12, 20]) {
      const id = ulidAfter(START, n);
      bound.note(id);
      await engine.commit(new WriteBatch().put(jobKey(id), new Uint8Array([1])));
    }
    expect(drawFrom(bound, engine, nextUlid(START), 30)).not.toContain(ulidAfter(START, 20));
    await engine.commit(new WriteBatch().put(jobKey(slow), new Uint8Array([1])));
    const ids = drawFrom(bound, engine, ulidAfter(START, 40), 20);
    expect(ids).not.toContain(slow);
    expect(ids).toContain(ulidAfter(START, 51));
    await engine.close();
  });

  it("more caller ids in flight above the draws than it keeps: every draw up to the bound is looked up again, none held is handed out", async () => {
    const engine = await engineHolding([]);
    const bound = CallerIdBound.of(engine);
    bound.mayHold(START);
    const inFlight = Array.from({ length: 100 }, (_, i) => ulidAfter(START, 2 * i + 2));
    for (const id of inFlight) bound.note(id);
    // Draws past the first ones while none has committed (handed out, as a lookup would not find them either)...
    drawFrom(bound, engine, nextUlid(START), 128);
    await engine.commit(inFlight.reduce((b, id) => b.put(jobKey(id), new Uint8Array([1])), new WriteBatch()));
    // ...then the rest, committed meanwhile, must each be passed over.
    const lookups = countLookups(engine);
    const ids = drawFrom(bound, engine, ulidAfter(START, 130), 100);
    expect(ids.filter((id) => inFlight.includes(id))).toEqual([]);
    // Every draw up to the greatest noted id (positions 130-200).
    expect(lookups.count).toBe(71);
    await engine.close();
  });

  it("ids of other shapes where ULIDs sort change nothing: a scan passes over them, up to its limit, and stays right", async () => {
    const others = Array.from({ length: 100 }, (_, i) => `1-${String(i).padStart(3, "0")}`);
    const taken = "1ZZZZZZZZZZZZZZZZZZZZZZZZZ";
    const engine = await engineHolding([...others, taken, FAR_FUTURE]);
    const bound = CallerIdBound.of(engine);
    const lookups = countLookups(engine);
    expect(drawFrom(bound, engine, START, 50)).toEqual(Array.from({ length: 50 }, (_, i) => ulidAfter(START, i)));
    expect(lookups.count).toBe(0);
    expect(drawFrom(bound, engine, "1ZZZZZZZZZZZZZZZZZZZZZZZZX", 3)).toEqual([
      "1ZZZZZZZZZZZZZZZZZZZZZZZZX",
      "1ZZZZZZZZZZZZZZZZZZZZZZZZY",
      "20000000000000000000000000",
    ]);
    expect(lookups.count).toBe(1);
    await engine.close();
  });
});
