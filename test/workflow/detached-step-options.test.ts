/**
 * @module `Step.detached`'s and `Delivery.detached`'s options refuse a field
 * that is none of theirs (a misspelt `stepNumbr` used to unit-test the
 * runner on step 0 in silence) and a value of the wrong kind, naming it;
 * the memo store given is not touched by a refused call. Spelt right, each
 * option is taken.
 */
import { describe, expect, it } from "vitest";
import { Delivery, MemoryStore, Step, ValidationError, withCounting, type DetachedOptions } from "../../runtime/index.js";

const enc = (s: string) => new TextEncoder().encode(s);

function refusalOf(act: () => unknown): ValidationError {
  try {
    act();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error("expected a refusal");
}

describe("a detached step's options", () => {
  it("refuse a misspelt field, naming it, listing the options and suggesting the close one", () => {
    const store = withCounting(new MemoryStore());
    const step = refusalOf(() => Step.detached(enc("x"), { stepNumbr: 2, store } as unknown as DetachedOptions));
    expect(step.message).toMatch(/^Step\.detached's options has a field that is not an option/);
    expect(step.issues).toEqual([
      "DetachedOptions.stepNumbr is not an option (misspelt?); the options are runId, headers, jobId, attempt, maxAttempts, stepNumber, signal, cancelSignal, store, memoPrefix, kv; did you mean stepNumber?",
    ]);
    const delivery = refusalOf(() => Delivery.detached({ maxAttempt: 1 } as unknown as DetachedOptions));
    expect(delivery.message).toMatch(/^Delivery\.detached's options has a field/);
    expect(delivery.issues[0]).toMatch(/^DetachedOptions\.maxAttempt is not an option .*; did you mean maxAttempts\?$/);
    expect(store.counts.puts + store.counts.gets + store.counts.lists).toBe(0);
  });

  it("refuse values of the wrong kind, every problem at once", () => {
    const err = refusalOf(() =>
      Step.detached(enc("x"), {
        stepNumber: -1,
        attempt: Number.NaN,
        maxAttempts: 1e30,
        jobId: "",
        signal: "sig",
        cancelSignal: {},
        store: {},
        kv: "k",
      } as unknown as DetachedOptions),
    );
    expect(err.issues).toEqual([
      "DetachedOptions.attempt must be an integer from 1 to 9007199254740991, got NaN",
      "DetachedOptions.maxAttempts must be an integer from 1 to 9007199254740991, got 1e+30",
      "DetachedOptions.stepNumber must be an integer from 0 to 9007199254740991, got -1",
      'DetachedOptions.jobId must be a non-empty string, got "" (a string)',
      'DetachedOptions.signal must be a Uint8Array or null, got "sig" (a string)',
      "DetachedOptions.cancelSignal must be an AbortSignal, got an object",
      "DetachedOptions.store must be an ObjectStore (get, put, delete, list), got an object",
      'DetachedOptions.kv must be an object, got "k" (a string)',
    ]);
    expect(() => Step.detached(enc("x"), null as unknown as DetachedOptions)).toThrow(/Step\.detached's options must be an object, got null/);
  });

  it("refuse a Proxy around a built-in store that would call the store's own methods on itself", () => {
    const err = refusalOf(() => Step.detached(enc("x"), { store: new Proxy(new MemoryStore(), {}) }));
    expect(err.issues).toEqual([
      expect.stringMatching(/^DetachedOptions\.store is a Proxy or wrapper around a MemoryStore whose get is the MemoryStore's own method/),
    ]);
  });

  it("spelt right, are taken; a getter is read once", async () => {
    let reads = 0;
    const store = new MemoryStore();
    const opts = {
      get stepNumber(): number {
        reads++;
        return 4;
      },
      attempt: 2,
      maxAttempts: 2,
      signal: null,
      store,
      runId: "unit-run",
      kv: { k: enc("v") },
    };
    const step = Step.detached(enc("x"), opts);
    expect(reads).toBe(1);
    expect(step).toMatchObject({ stepNumber: 4, attempt: 2, maxAttempts: 2, signal: null });
    expect(step.isLastAttempt()).toBe(true);
    expect(new TextDecoder().decode((await step.kv.get("k"))!)).toBe("v");
    // The memo lives in the store given, under the run given: a second detached delivery of that step reads it.
    await step.memo.put("m", enc("1"));
    expect(new TextDecoder().decode((await Delivery.detached({ runId: "unit-run", store, stepNumber: 4 }).memo.get("m"))!)).toBe("1");
    expect(Step.detached(enc("x")).stepNumber).toBe(0);
  });
});
