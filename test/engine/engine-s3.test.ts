/**
 * @module The engine over S3Store against s3rver on loopback.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, FencedError, S3Store, WriteBatch } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";

const server = useS3Server();

const enc = (s: string) => new TextEncoder().encode(s);

describe("engine over S3 (s3rver on loopback)", () => {
  it("commits, checkpoints, recovers, fences and serves a reader", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: "engine-s3", clientConfig: server.clientConfig });
    const engine = await Engine.open(store, { checkpointWalObjects: 0 });
    await Promise.all(Array.from({ length: 50 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i))))));
    await engine.checkpoint();
    for (let i = 50; i < 60; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i))).delete(`k/${i - 50}`));
    const reader = await EngineReader.open(store);
    expect([...reader.scan()]).toHaveLength(50);

    const second = await Engine.open(store);
    expect([...second.scan({ prefix: "k/" })]).toHaveLength(50);
    await expect(engine.commit(new WriteBatch().put("stale", enc("x")))).rejects.toBeInstanceOf(FencedError);
    await second.commit(new WriteBatch().put("new", enc("y")));
    await reader.refresh();
    expect(reader.has("new")).toBe(true);
    expect(reader.has("stale")).toBe(false);
    await second.close();
    await engine.close();
  });
});
