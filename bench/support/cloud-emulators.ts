/**
 * @module Cloud stores on loopback for benchmarks: AzureBlobStore over
 * Azurite and GcsStore over the JSON API stand-in of the tests. Each call of
 * `makeStore` gives an empty store under a fresh prefix; `httpRequests`
 * counts the requests that reached the emulator so far. Loopback emulators
 * say nothing of cloud latency: they measure requests, not round trips.
 */
import { AzureBlobStore, GcsStore, type ObjectStore } from "../../runtime/index.js";
import { startAzurite } from "../../test/support/azurite.js";
import { startGcsServer } from "../../test/support/gcs-server.js";

export interface CloudEmulator {
  label: string;
  makeStore(): ObjectStore;
  httpRequests(): number;
}

const total = (requests: Record<string, number>) => Object.values(requests).reduce((a, b) => a + b, 0);

/** Starts the emulator `kind` (`azurite` or `gcs`), runs `fn` with it, and stops it. */
export async function withCloudEmulator(kind: "azurite" | "gcs", fn: (emulator: CloudEmulator) => Promise<void>): Promise<void> {
  let n = 0;
  const run = Date.now().toString(36);
  if (kind === "azurite") {
    const azurite = await startAzurite();
    try {
      await azurite.createContainer("bench");
      await fn({
        label: "AzureBlobStore (Azurite, loopback)",
        makeStore: () =>
          new AzureBlobStore({
            container: "bench",
            prefix: `${run}-${++n}`,
            account: azurite.account,
            accountKey: azurite.accountKey,
            endpoint: azurite.endpoint,
          }),
        httpRequests: () => total(azurite.requests),
      });
    } finally {
      await azurite.stop();
    }
  } else {
    const gcs = await startGcsServer();
    try {
      await fn({
        label: "GcsStore (JSON API stand-in, loopback)",
        makeStore: () => new GcsStore({ bucket: gcs.bucket, prefix: `${run}-${++n}`, apiEndpoint: gcs.endpoint }),
        httpRequests: () => total(gcs.requests),
      });
    } finally {
      await gcs.stop();
    }
  }
}
