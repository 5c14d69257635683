/**
 * @module One s3rver on loopback for the calling test file or `describe`
 * block: started before its first test and stopped after its last, by the
 * hooks `useS3Server` registers where it is called.
 */
import { afterAll, beforeAll, vi } from "vitest";
import { startS3Server, type TestS3Server } from "./s3-server.js";

/** The server as tests use it; the hooks stop it. */
export type SharedS3Server = Omit<TestS3Server, "stop">;

/**
 * Registers the hooks in the calling scope and returns the server, whose
 * fields can be read once it started: in tests and in hooks registered
 * after this call.
 */
export function useS3Server(opts?: Parameters<typeof startS3Server>[0]): SharedS3Server {
  let server: TestS3Server | undefined;
  beforeAll(async () => {
    server = await startS3Server(opts);
  });
  afterAll(async () => {
    await server?.stop();
    server = undefined;
  });
  const started = (): TestS3Server => {
    if (server === undefined) throw new Error("the S3 server is read before its beforeAll hook started it, or after its afterAll hook stopped it");
    return server;
  };
  return {
    get endpoint() {
      return started().endpoint;
    },
    get bucket() {
      return started().bucket;
    },
    get clientConfig() {
      return started().clientConfig;
    },
    get requests() {
      return started().requests;
    },
    failNext: (count, response) => started().failNext(count, response),
    listWith: (faults) => started().listWith(faults),
  };
}

/**
 * Runs `body` with the AWS environment a CLI or an owner opened from an
 * `s3://` URL reads pointed at `s3` (s3rver's fixed credentials), and puts
 * the environment back after it.
 */
export async function withS3Environment<T>(s3: SharedS3Server, body: () => Promise<T>): Promise<T> {
  vi.stubEnv("AWS_ACCESS_KEY_ID", "S3RVER");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "S3RVER");
  vi.stubEnv("AWS_REGION", "us-east-1");
  vi.stubEnv("AWS_ENDPOINT_URL_S3", s3.endpoint);
  try {
    return await body();
  } finally {
    vi.unstubAllEnvs();
  }
}
