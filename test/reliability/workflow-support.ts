/**
 * @module Fixtures of the workflow reliability tests: the three stores every
 * case runs against (memory, a local directory, S3 over s3rver on
 * loopback), a store that fails chosen calls a set number of times, and a
 * bound on how long a promise may take before the test fails.
 */
import { LocalStore, MemoryStore, S3Store, type ObjectStore } from "taquba";
import { afterAll } from "vitest";
import { startS3Server, type TestS3Server } from "../support/s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";

/** A store backend: a name for the test title and a fresh, empty store. */
export interface Backend {
  name: string;
  make(): Promise<ObjectStore>;
}

/**
 * The backends of a test file: memory, LocalStore in a temporary
 * directory, and S3Store against one s3rver started on first use and
 * stopped after the file. Call at the top level of a test file.
 */
export function useBackends(): Backend[] {
  const tempDir = useTempDirs("taquba-wf-rel-");
  let server: Promise<TestS3Server> | undefined;
  let n = 0;
  afterAll(async () => {
    if (server !== undefined) await (await server).stop();
  });
  return [
    { name: "MemoryStore", make: async () => new MemoryStore() },
    { name: "LocalStore", make: async () => new LocalStore(await tempDir()) },
    {
      name: "S3Store (s3rver)",
      make: async () => {
        server ??= startS3Server();
        const s = await server;
        return new S3Store({ bucket: s.bucket, prefix: `wf-rel-${++n}`, clientConfig: s.clientConfig });
      },
    },
  ];
}

/** A store whose gets or puts of keys matching `match` fail, the first `times` of them. */
export interface FailingStore extends ObjectStore {
  /** How many calls failed so far. */
  readonly failed: number;
}

export function failing(inner: ObjectStore, op: "get" | "put", match: (key: string) => boolean, times: number): FailingStore {
  let failed = 0;
  const fault = (key: string) => new Error(`injected ${op} failure of "${key}" (a dropped connection)`);
  const shouldFail = (key: string) => match(key) && failed < times && (failed++, true);
  return {
    get failed() {
      return failed;
    },
    async get(key) {
      if (op === "get" && shouldFail(key)) throw fault(key);
      return inner.get(key);
    },
    async put(key, body, opts) {
      if (op === "put" && shouldFail(key)) throw fault(key);
      return inner.put(key, body, opts);
    },
    delete: (key) => inner.delete(key),
    list: (prefix, opts) => inner.list(prefix, opts),
  };
}

/** `p`, or a rejection naming `what` after `ms` of real time (a hang fails the test quickly instead of at its timeout). */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `p` is still pending after the current turns of the event loop. */
export async function isPending(p: Promise<unknown>): Promise<boolean> {
  const marker = Symbol("pending");
  const r = await Promise.race([
    p.then(
      () => "settled",
      () => "settled",
    ),
    new Promise((res) => setTimeout(() => res(marker), 20)),
  ]);
  return r === marker;
}
