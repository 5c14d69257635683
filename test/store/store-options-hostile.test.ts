/**
 * @module One rule for the options of every store and store wrapper: each
 * field is read once, and an options object whose getter throws, a Proxy
 * whose every read throws, or a revoked Proxy is refused with a
 * ValidationError naming the option (never the raw error); so is a field
 * that is no option (a misspelling would otherwise leave the option at its
 * default without a word), named with the options taken; an object
 * without a prototype or a frozen one is taken like any other.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AzureBlobStore, GcsStore, LocalStore, MemoryStore, S3Store, ValidationError, openStore, withFaults, withLatency } from "taquba";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "taquba-store-options-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** An S3 client that is never called: the constructors only check its shape. */
const client = { send: async () => ({}) };

interface Case {
  /** The constructor or wrapper, given an options object. */
  make: (opts: object) => unknown;
  /** Options it accepts. */
  valid: Record<string, unknown>;
  /** How its errors name the options object. */
  name: string;
  /** A field it reads. */
  field: string;
}

const cases: Record<string, Case> = {
  LocalStore: { make: (o) => new LocalStore(path.join(dir, "local"), o), valid: { putThread: false }, name: "LocalStoreOptions", field: "putThread" },
  S3Store: { make: (o) => new S3Store(o as never), valid: { bucket: "bucket", client }, name: "S3StoreOptions", field: "bucket" },
  "S3Store's retry": {
    make: (o) => new S3Store({ bucket: "bucket", client: client as never, retry: o }),
    // With the timeout S3 takes beside the retry fields every HTTP store shares (checked apart from them).
    valid: { maxAttempts: 2, attemptTimeoutMs: 1000 },
    name: "S3StoreOptions.retry",
    field: "maxAttempts",
  },
  GcsStore: { make: (o) => new GcsStore(o as never), valid: { bucket: "bucket" }, name: "GcsStoreOptions", field: "bucket" },
  AzureBlobStore: {
    make: (o) => new AzureBlobStore(o as never),
    valid: { container: "box", connectionString: "UseDevelopmentStorage=true" },
    name: "AzureBlobStoreOptions",
    field: "container",
  },
  withLatency: { make: (o) => withLatency(new MemoryStore(), o as never), valid: { ms: 0 }, name: "LatencyOptions", field: "ms" },
  withFaults: { make: (o) => withFaults(new MemoryStore(), o as never), valid: { failureRate: 0 }, name: "FaultOptions", field: "failureRate" },
  openStore: { make: (o) => openStore("memory://", o), valid: { env: {} }, name: "OpenStoreOptions", field: "env" },
};

function refusal(make: () => unknown): Error {
  try {
    make();
  } catch (err) {
    return err as Error;
  }
  throw new Error("the options were taken");
}

describe.each(Object.entries(cases))("%s's options", (_, c) => {
  it("whose getter throws are refused with a ValidationError naming the option", () => {
    const opts = { ...c.valid };
    Object.defineProperty(opts, c.field, {
      enumerable: true,
      get() {
        throw new Error("the getter threw");
      },
    });
    const err = refusal(() => c.make(opts));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toContain(`${c.name} could not be read`);
    expect((err as ValidationError).issues.join("\n")).toContain(`reading ${c.name}.${c.field} threw: the getter threw`);
  });

  it("that are a Proxy throwing at every read are refused so", () => {
    const opts = new Proxy(c.valid, {
      get() {
        throw new Error("the proxy threw");
      },
    });
    const err = refusal(() => c.make(opts));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toContain(`${c.name} could not be read`);
  });

  it("that are a revoked Proxy are refused as not an object", () => {
    const p = Proxy.revocable(c.valid, {});
    p.revoke();
    const err = refusal(() => c.make(p.proxy));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toMatch(/must be an object, got a revoked Proxy/);
  });

  it("that are an array are refused as not an object", () => {
    const err = refusal(() => c.make([]));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toMatch(/must be an object, got an array/);
  });

  it("are taken from an object without a prototype, and from a frozen one", () => {
    expect(() => c.make(Object.assign(Object.create(null) as object, c.valid))).not.toThrow();
    expect(() => c.make(Object.freeze({ ...c.valid }))).not.toThrow();
  });

  it("with a field that is no option (a misspelling) are refused naming it and the options taken", () => {
    const misspelt = `${c.field.slice(0, -1)}${c.field.slice(-1).toUpperCase()}s`;
    const err = refusal(() => c.make({ ...c.valid, [misspelt]: c.valid[c.field] ?? 1 }));
    expect(err).toBeInstanceOf(ValidationError);
    const issues = (err as ValidationError).issues;
    expect(issues).toHaveLength(1);
    expect(issues[0]).toContain(`${c.name}.${misspelt} is not an option`);
    expect(issues[0]).toMatch(new RegExp(`the options are .*\\b${c.field}\\b`));
    // Spelt right, the same options are taken.
    expect(() => c.make({ ...c.valid })).not.toThrow();
  });

  it("with a key no option could spell, or a field set to undefined, are refused so; a symbol key is no field", () => {
    const odd = refusal(() => c.make({ ...c.valid, "": 1, "a b": 2 }));
    expect(odd).toBeInstanceOf(ValidationError);
    expect((odd as ValidationError).issues).toEqual([
      expect.stringContaining(`${c.name}."" is not an option`),
      expect.stringContaining(`${c.name}."a b" is not an option`),
    ]);
    expect(refusal(() => c.make({ ...c.valid, nope: undefined }))).toBeInstanceOf(ValidationError);
    expect(() => c.make({ ...c.valid, [Symbol("tag")]: 1 })).not.toThrow();
  });

  it("with an own __proto__ field (options parsed from JSON) are refused naming it; the prototype it would set is not taken", () => {
    const parsed = JSON.parse('{"__proto__": {"smuggled": true}}') as object;
    const err = refusal(() => c.make(Object.assign(parsed, c.valid)));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues).toEqual([expect.stringContaining(`${c.name}.__proto__ is not an option`)]);
  });

  it("with 20,000 fields that are no option (a large configuration spread in) are refused in a message of bounded size", () => {
    const stray: Record<string, number> = {};
    for (let i = 0; i < 20_000; i++) stray[`setting${i}`] = i;
    const err = refusal(() => c.make({ ...c.valid, ...stray }));
    expect(err).toBeInstanceOf(ValidationError);
    const issues = (err as ValidationError).issues;
    expect(issues).toHaveLength(11);
    expect(issues[0]).toContain(`${c.name}.setting0 is not an option`);
    expect(issues[10]).toBe(`19990 more fields of ${c.name} are not options either (20000 in all)`);
    expect(err.message.length).toBeLessThan(5_000);
  });

  it("that are a Proxy whose keys cannot be listed are refused with a ValidationError, not the raw error", () => {
    const opts = new Proxy(c.valid, {
      ownKeys() {
        throw new Error("the keys threw");
      },
    });
    const err = refusal(() => c.make(opts));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toContain("threw: the keys threw");
  });
});
