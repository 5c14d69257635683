import { LocalStore, MemoryStore, S3Store, withFaults, type EngineOptions, type ObjectStore } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
export { keysUnder } from "../support/store-keys.js";

export interface TestStore {
  /** The store under test, as the engine sees it. */
  store: ObjectStore;
  /** The same objects without faults, to delete or inspect them. */
  raw: ObjectStore;
}

export interface Backend {
  name: string;
  make(): Promise<TestStore>;
}

/** Engine retries generous enough for a 10% fault rate, with no real waiting. */
export const RETRY: NonNullable<EngineOptions["retry"]> = { attempts: 30, baseDelayMs: 0, maxDelayMs: 1 };

/**
 * Registers the three backends for the calling test file (an s3rver started
 * once for the file, temporary directories removed after each test).
 */
export function useBackends(): Backend[] {
  const tempDir = useTempDirs("taquba-reliability-");
  const server = useS3Server();
  let n = 0;
  let seed = 1;
  return [
    {
      name: "LocalStore",
      make: async () => {
        const store = new LocalStore(await tempDir());
        return { store, raw: store };
      },
    },
    {
      name: "MemoryStore with faults",
      make: async () => {
        const raw = new MemoryStore();
        return { store: withFaults(raw, { failureRate: 0.1, seed: seed++, failAfterWriteRate: 0.5 }), raw };
      },
    },
    {
      name: "S3 (s3rver)",
      make: async () => {
        const store = new S3Store({ bucket: server.bucket, prefix: `case-${++n}`, clientConfig: server.clientConfig });
        return { store, raw: store };
      },
    },
  ];
}

/** Every key under `prefix`, in order. */
