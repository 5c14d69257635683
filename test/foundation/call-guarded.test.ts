/**
 * callGuarded (option-values.ts) runs caller code whose failure has nowhere
 * to go: a throw, a rejection or a hostile thenable goes to `failed`, and a
 * `failed` that throws in turn (it reports a value the caller made) is
 * dropped, neither thrown to the caller nor left as an unhandled rejection.
 */
import { describe, expect, it } from "vitest";
import { callGuarded } from "../../runtime/option-values.js";
import { turns, unhandledRejections } from "../support/unhandled-rejections.js";

const unhandled = unhandledRejections();

describe("callGuarded", () => {
  const failing = [
    [
      "throws",
      () => () => {
        throw new Error("sync");
      },
    ],
    ["returns a rejected promise", () => () => Promise.reject(new Error("async"))],
    // biome-ignore lint/suspicious/noThenProperty: a hostile thenable on purpose
    ["returns a thenable that rejects at once, inside then", () => () => ({ then: (_ok: unknown, no: (e: unknown) => void) => no(new Error("thenable")) })],
    [
      "returns an object whose then getter throws",
      () => () => ({
        // biome-ignore lint/suspicious/noThenProperty: a hostile thenable on purpose
        get then(): unknown {
          throw new Error("getter");
        },
      }),
    ],
    [
      "returns a thenable whose then throws",
      () => () => ({
        // biome-ignore lint/suspicious/noThenProperty: a hostile thenable on purpose
        then() {
          throw new Error("then");
        },
      }),
    ],
    [
      "returns a revoked Proxy",
      () => () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
    ],
  ] as const;

  for (const [name, make] of failing) {
    it(`a call that ${name}: failed hears of it once`, async () => {
      const seen: unknown[] = [];
      callGuarded(make(), (err) => seen.push(err));
      await turns(5);
      expect(seen).toHaveLength(1);
    });

    it(`a call that ${name}, with a failed that throws too: nothing escapes, no unhandled rejection`, async () => {
      unhandled.watch();
      let calls = 0;
      expect(() =>
        callGuarded(make(), () => {
          calls++;
          throw new Error("the report failed");
        }),
      ).not.toThrow();
      await turns(5);
      expect(calls).toBe(1);
      expect(unhandled.seen).toEqual([]);
    });
  }

  it("a thenable that never settles: returns at once and never calls failed", async () => {
    let failed = 0;
    callGuarded(
      // biome-ignore lint/suspicious/noThenProperty: a hostile thenable on purpose
      () => ({ then: () => undefined }),
      () => failed++,
    );
    callGuarded(
      () => new Promise(() => undefined),
      () => failed++,
    );
    await turns(5);
    expect(failed).toBe(0);
  });

  it("a call that succeeds, or returns a value that is not a thenable: failed is not called", async () => {
    let failed = 0;
    // biome-ignore lint/suspicious/noThenProperty: a hostile thenable on purpose
    for (const v of [undefined, null, 0, "x", {}, () => 1, Promise.resolve(3), { then: 5 }])
      callGuarded(
        () => v,
        () => failed++,
      );
    await turns(5);
    expect(failed).toBe(0);
  });
});
