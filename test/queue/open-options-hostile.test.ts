/**
 * @module Options built to break the code reading them: revoked Proxies
 * (which throw at any question, `Array.isArray` included), getters and
 * clocks throwing values that have no text (an object without a prototype,
 * an error whose message getter throws). Queue.open and Engine.open refuse
 * each with a ValidationError naming the option, before any IO.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, Queue, ValidationError } from "taquba";

const revoked = (): object => {
  const p = Proxy.revocable({}, {});
  p.revoke();
  return p.proxy;
};
/** A thrown value that `String` cannot turn into text. */
const textless = () => Object.create(null) as object;
const errorWithThrowingMessage = () => {
  const e = new Error("unused");
  Object.defineProperty(e, "message", {
    get() {
      throw new Error("the message getter threw");
    },
  });
  return e;
};

const queueCases: [string, () => unknown, RegExp][] = [
  ["options that are a revoked Proxy", revoked, /Queue\.open options must be an object, got a revoked Proxy/],
  ["queueConfigs a revoked Proxy", () => ({ queueConfigs: revoked() }), /OpenOptions\.queueConfigs must be an object, got a revoked Proxy/],
  ["defaultQueueConfig a revoked Proxy", () => ({ defaultQueueConfig: revoked() }), /OpenOptions\.defaultQueueConfig must be an object/],
  ["engineOptions a revoked Proxy", () => ({ engineOptions: revoked() }), /engine options must be an object, got a revoked Proxy/],
  ["engineOptions.retry a revoked Proxy", () => ({ engineOptions: { retry: revoked() } }), /retry must be an object .*got a revoked Proxy/],
  ["engineOptions.pageValues a revoked Proxy", () => ({ engineOptions: { pageValues: revoked() } }), /pageValues\.keyPrefixes must be an array of strings/],
  ["logger a revoked Proxy", () => ({ logger: revoked() }), /OpenOptions\.logger must be an object.*got a revoked Proxy/],
  ["clock a revoked Proxy", () => ({ clock: revoked() }), /OpenOptions\.clock must be an object with a now\(\) method, got a revoked Proxy/],
  [
    "a getter throwing a value without text",
    () => ({
      get flushIntervalMs() {
        throw textless();
      },
    }),
    /reading OpenOptions\.flushIntervalMs threw: a value that cannot be shown as text/,
  ],
  [
    "a getter throwing an error whose message getter throws",
    () => ({
      get payloadOffloadBytes() {
        throw errorWithThrowingMessage();
      },
    }),
    /reading OpenOptions\.payloadOffloadBytes threw: a value that cannot be shown as text/,
  ],
  [
    "a Proxy whose every read throws a value without text",
    () =>
      new Proxy(
        {},
        {
          get() {
            throw textless();
          },
        },
      ),
    /reading OpenOptions\.clock threw: a value that cannot be shown as text/,
  ],
  [
    "a clock whose now() throws a value without text",
    () => ({
      clock: {
        now() {
          throw textless();
        },
      },
    }),
    /OpenOptions\.clock\.now\(\) threw: a value that cannot be shown as text/,
  ],
];

describe("Queue.open refuses hostile options with a ValidationError", () => {
  for (const [name, make, message] of queueCases) {
    it(name, async () => {
      const store = new MemoryStore();
      const err = await Queue.open(store, "q", make() as never).then(
        async (q) => {
          await q.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(message);
      // Nothing was written.
      expect(store.size).toBe(0);
    });
  }
});

describe("Engine.open refuses hostile options with a ValidationError", () => {
  const cases: [string, () => unknown][] = [
    ["options that are a revoked Proxy", revoked],
    ["retry a revoked Proxy", () => ({ retry: revoked() })],
    ["pageValues a revoked Proxy", () => ({ pageValues: revoked() })],
    ["pageValues.keyPrefixes a revoked Proxy", () => ({ pageValues: { keyPrefixes: revoked() } })],
    [
      "a getter throwing a value without text",
      () => ({
        get maxSegmentBytes() {
          throw textless();
        },
      }),
    ],
    [
      "a clock whose now() throws an error whose message getter throws",
      () => ({
        clock: {
          now() {
            throw errorWithThrowingMessage();
          },
        },
      }),
    ],
  ];
  for (const [name, make] of cases) {
    it(name, async () => {
      const store = new MemoryStore();
      const err = await Engine.open(store, make() as never).then(
        async (e) => {
          await e.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect(store.size).toBe(0);
    });
  }
});

describe("options without a prototype, or frozen, are taken like any other", () => {
  const bare = <T extends object>(fields: T): T => Object.assign(Object.create(null) as T, fields);
  const shapes: [string, <T extends object>(fields: T) => T][] = [
    ["without a prototype", bare],
    ["frozen", (fields) => Object.freeze(fields)],
  ];
  for (const [shape, make] of shapes) {
    it(`Queue.open, with nested settings ${shape}`, async () => {
      const store = new MemoryStore();
      const opts = make({
        recordCacheBytes: 1024,
        defaultQueueConfig: make({ maxAttempts: 5, backoff: make({ baseMs: 10, maxMs: 20 }) }),
        queueConfigs: make({ q: make({ leaseMs: 1000 }) }),
        engineOptions: make({ retry: make({ attempts: 2 }), pageValues: make({ keyPrefixes: ["j/"], minBytes: 1 }) }),
      });
      const q = await Queue.open(store, "q", opts);
      await q.enqueue("q", new Uint8Array([1]));
      const job = await q.claim("q");
      // The settings took: five attempts from the default config.
      expect(job?.attempt).toBe(1);
      expect(job?.maxAttempts).toBe(5);
      await q.close();
    });
    it(`Engine.open ${shape}`, async () => {
      const e = await Engine.open(new MemoryStore(), make({ maxWalBytes: 4096, retry: make({ attempts: 2 }) }));
      await e.close();
    });
  }
});

describe("a field that is no option is refused, not left to a default in silence", () => {
  it("at Queue.open's top and in its engineOptions, naming the field and the options taken, before any IO", async () => {
    const store = new MemoryStore();
    const top = await Queue.open(store, "q", { flushIntervalMS: 5 } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(top).toBeInstanceOf(ValidationError);
    expect((top as ValidationError).issues).toEqual([expect.stringMatching(/^OpenOptions\.flushIntervalMS is not an option .*\bflushIntervalMs\b/)]);
    const nested = await Queue.open(store, "q", { engineOptions: { checkpointWalObject: 4 } as never }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(nested).toBeInstanceOf(ValidationError);
    expect((nested as ValidationError).message).toContain("checkpointWalObject is not an option");
    const written: string[] = [];
    for await (const o of store.list("")) written.push(o.key);
    expect(written).toEqual([]);
  });
});
