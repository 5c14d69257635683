/**
 * @module openStore: which store each URL form opens, with which settings, and the
 * error every malformed URL gets.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { AZURITE_ACCOUNT_KEY, AzureBlobStore, GcsStore, LocalStore, MemoryStore, S3Store, ValidationError, openStore } from "taquba";
import { startS3Server } from "../support/s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";

// The space checks that a file URL's percent-encoded path is decoded.
const tempDir = useTempDirs("taquba open ");

describe("openStore", () => {
  it("opens a fresh MemoryStore for memory://", async () => {
    const a = openStore("memory://");
    const b = openStore("memory://");
    expect(a).toBeInstanceOf(MemoryStore);
    await a.put("k", new Uint8Array([1]));
    expect(await b.get("k")).toBeNull();
  });

  it("opens a LocalStore for file:///abs/dir, decoding the path", async () => {
    const dir = await tempDir();
    const url = pathToFileURL(join(dir, "sub dir")).href;
    expect(url).toContain("%20");
    const store = openStore(url);
    expect(store).toBeInstanceOf(LocalStore);
    expect((store as LocalStore).root).toBe(join(dir, "sub dir"));
    await store.put("x/y", new Uint8Array([7]));
    expect((await new LocalStore(join(dir, "sub dir")).get("x/y"))!.body).toEqual(new Uint8Array([7]));
  });

  it("reads bucket and prefix from s3 URLs and AWS settings from the environment", async () => {
    const store = openStore("s3://my-bucket/tenants/a%20b/", {
      env: { AWS_ENDPOINT_URL: "http://generic:9000", AWS_ENDPOINT_URL_S3: "http://s3-specific:9000", AWS_REGION: "eu-west-3" },
    });
    expect(store).toBeInstanceOf(S3Store);
    const s3 = store as S3Store;
    expect(s3.bucket).toBe("my-bucket");
    expect(s3.prefix).toBe("tenants/a b/");
    expect(await s3.client.config.region()).toBe("eu-west-3");
    const endpoint = await s3.client.config.endpoint!();
    expect(endpoint.hostname).toBe("s3-specific");
    expect(s3.client.config.forcePathStyle).toBe(true);
  });

  it("lets URL options override the environment, and uses AWS_ENDPOINT_URL as a fallback", async () => {
    const fromQuery = openStore("s3://b1/p?endpoint=http://127.0.0.1:9999&forcePathStyle=false&region=ap-south-1", {
      env: { AWS_ENDPOINT_URL_S3: "http://ignored:1", AWS_REGION: "eu-west-3" },
    }) as S3Store;
    expect((await fromQuery.client.config.endpoint!()).hostname).toBe("127.0.0.1");
    expect(fromQuery.client.config.forcePathStyle).toBe(false);
    expect(await fromQuery.client.config.region()).toBe("ap-south-1");
    const generic = openStore("s3://b2", { env: { AWS_ENDPOINT_URL: "http://generic:9000", AWS_DEFAULT_REGION: "us-west-2" } }) as S3Store;
    expect(generic.prefix).toBe("");
    expect((await generic.client.config.endpoint!()).hostname).toBe("generic");
    expect(await generic.client.config.region()).toBe("us-west-2");
    const aws = openStore("s3://b3/x", { env: { AWS_REGION: "us-east-1" } }) as S3Store;
    expect(aws.client.config.forcePathStyle).toBe(false);
  });

  it("talks to an S3-compatible server named by URL", async () => {
    const server = await startS3Server();
    try {
      const store = openStore(`s3://${server.bucket}/via-url?endpoint=${encodeURIComponent(server.endpoint)}&region=us-east-1`, {
        env: {},
      });
      // The SDK reads credentials from process.env, not from the env option.
      const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
      process.env.AWS_ACCESS_KEY_ID = "S3RVER";
      process.env.AWS_SECRET_ACCESS_KEY = "S3RVER";
      try {
        await store.put("k", new Uint8Array([1, 2]));
        const listed: string[] = [];
        for await (const o of store.list("")) listed.push(o.key);
        expect(listed).toEqual(["k"]);
      } finally {
        if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
        else process.env.AWS_ACCESS_KEY_ID = saved.id;
        if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
        else process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
      }
    } finally {
      await server.stop();
    }
  });

  it.each([
    ["", "not a URL"],
    ["/tmp/dir", "not a URL"],
    ["file:relative/dir", "absolute path"],
    ["file://host/dir", "absolute path"],
    ["file:///", "root"],
    ["file:///tmp/x?y=1", "no options"],
    ["memory://somewhere", "memory://"],
    ["s3:///prefix", "bucket is missing"],
    ["s3://b/p?endpoint=not%20a%20url", "not a URL"],
    ["s3://b/p?forcePathStyle=yes", "forcePathStyle"],
    ["s3://b/p?timeout=3", 'unknown option "timeout"'],
    ["s3://user:pw@b/p", "credentials"],
    ["s3://bkt/a//c", "empty segment"],
    ["s3://b/p", "invalid bucket name"],
    ["ftp://bucket/x", 'unknown scheme "ftp:"'],
    ["azure:///container/p", "account is missing"],
    ["azure://acct", "container is missing"],
    ["azure://acct/", "container is missing"],
    ["azure://acct/Bad_Container/p", "invalid container name"],
    ["azure://Bad-Acct/c0ntainer/p", "invalid account name"],
    ["azure://acct/box/p?region=x", 'unknown option "region"'],
    ["azure://acct/box/p?endpoint=nope", "not a URL"],
    ["azure://acct/box/p?endpoint=file:///x", "not a URL"],
    ["azure://k:s@acct/box/p", "credentials"],
    ["azure://acct/box/a%ZZb", "malformed percent-encoding"],
    ["azure://acct/box/a//b", "empty segment"],
    ["gs:///prefix", "bucket is missing"],
    ["gs://Bad_Bucket/p", "invalid bucket name"],
    ["gs://bucket/p?forcePathStyle=true", 'unknown option "forcePathStyle"'],
    ["gs://bucket:8080/p", "ports"],
    ["gs://bucket/a%5Cb", "backslash"],
  ])("rejects %j with a ValidationError naming the accepted forms", (url, why) => {
    let err: unknown;
    try {
      openStore(url, { env: {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    const message = (err as ValidationError).message;
    expect(message).toContain(why);
    expect(message).toContain("memory://, file:///absolute/dir or s3://bucket/prefix");
    expect(message).toContain("azure://account/container/prefix");
    expect(message).toContain("gs://bucket/prefix");
  });

  it("reads account, container and prefix from azure URLs and picks credentials from the environment", () => {
    const withKey = openStore("azure://myacct/box/tenants/a%20b/", { env: { AZURE_STORAGE_KEY: "a2V5" } }) as AzureBlobStore;
    expect(withKey).toBeInstanceOf(AzureBlobStore);
    expect([withKey.account, withKey.container, withKey.prefix, withKey.endpoint]).toEqual([
      "myacct",
      "box",
      "tenants/a b/",
      "https://myacct.blob.core.windows.net",
    ]);
    const emulator = openStore("azure://devstoreaccount1/box?endpoint=http://127.0.0.1:10000", { env: {} }) as AzureBlobStore;
    expect(emulator.endpoint).toBe("http://127.0.0.1:10000/devstoreaccount1");
    expect(emulator.prefix).toBe("");
    // A connection string for the same account is used (its account is not known before connecting).
    const cs = `DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=${AZURITE_ACCOUNT_KEY}`;
    expect((openStore("azure://myacct/box", { env: { AZURE_STORAGE_CONNECTION_STRING: cs } }) as AzureBlobStore).account).toBeUndefined();
    // One for another account is not.
    expect((openStore("azure://other/box", { env: { AZURE_STORAGE_CONNECTION_STRING: cs } }) as AzureBlobStore).account).toBe("other");
  });

  it("reads bucket and prefix from gs URLs", () => {
    const store = openStore("gs://my-bucket/tenants/a?endpoint=http://127.0.0.1:4443", { env: {} }) as GcsStore;
    expect(store).toBeInstanceOf(GcsStore);
    expect([store.bucket, store.prefix, store.apiEndpoint]).toEqual(["my-bucket", "tenants/a/", "http://127.0.0.1:4443"]);
    expect((openStore("gs://my-bucket", { env: {} }) as GcsStore).prefix).toBe("");
  });
});
