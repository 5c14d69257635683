/**
 * @module An S3Store listing over the S3 protocol server while another
 * writer deletes and creates keys: the pages come one request at a time,
 * each starting after the last key of the one before, so a key deleted
 * between two pages (or while the server reads its files for one) must
 * neither end the listing early nor make it skip or repeat a key that
 * stayed. Every key present from before the listing to after it is listed
 * exactly once, in order; a key listed was in the store at some point.
 * The pages are small (a client middleware asks for a few keys a page), so
 * the churn meets many page boundaries.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { S3Store } from "taquba";
import { createS3Client } from "../../runtime/store/s3-client.js";
import { useS3Server } from "../support/use-s3-server.js";
import { testRandom } from "../support/seed.js";

const server = useS3Server();
let counter = 0;
const body = new Uint8Array([1]);
const PAGE = 4;
const key = (n: number) => `m/${String(n).padStart(4, "0")}`;

/** A client whose listings ask for `PAGE` keys a page; `pages` counts the list requests sent. */
function smallPages(): { client: S3Client; pages: () => number } {
  const client = createS3Client({ ...server.clientConfig, maxAttempts: 1 });
  let pages = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "ListObjectsV2Command") {
        (args.input as { MaxKeys?: number }).MaxKeys = PAGE;
        pages++;
      }
      return next(args);
    },
    { step: "initialize", name: "smallListPages" },
  );
  return { client, pages: () => pages };
}

function sortedBytes(keys: string[]): string[] {
  return [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

describe("an S3Store listing while another writer deletes and creates keys", () => {
  it("lists every key present throughout exactly once, in order, across small pages", async () => {
    const rnd = testRandom("s3 listing churn");
    const { client, pages } = smallPages();
    const prefix = `churn-${++counter}`;
    const lister = new S3Store({ bucket: server.bucket, prefix, client, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const writer = new S3Store({ bucket: server.bucket, prefix, clientConfig: server.clientConfig, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const initial = Array.from({ length: 60 }, (_, i) => key(2 * i + 1));
    for (const k of initial) await writer.put(k, body);
    const ever = new Set(initial);
    const deleted = new Set<string>();
    // Deletes that landed while the listing still ran (a victim is in `deleted` from before its request is sent).
    let deletesLanded = 0;

    // The writer churns beside the listing: deletes keys on both sides of the cursor, creates keys between and past them.
    let listing = true;
    const churn = (async () => {
      let next = 2 * initial.length + 1;
      while (listing) {
        const victim = initial[rnd.int(initial.length)]!;
        deleted.add(victim);
        await writer.delete(victim);
        if (listing) deletesLanded++;
        const between = key(2 * rnd.int(initial.length));
        ever.add(between);
        await writer.put(between, body);
        const past = key(next++);
        ever.add(past);
        await writer.put(past, body);
      }
    })();
    const listed: string[] = [];
    try {
      for await (const o of lister.list("m/")) {
        listed.push(o.key);
        // Give the writer a turn between keys as well as while a page is read.
        await new Promise<void>((r) => setImmediate(r));
      }
    } finally {
      listing = false;
      await churn;
    }

    expect(pages(), "the listing crossed many pages").toBeGreaterThan(initial.length / PAGE);
    expect(deletesLanded, "deletes that landed while the listing ran").toBeGreaterThan(0);
    expect(listed, "in byte order, none twice").toEqual(sortedBytes([...new Set(listed)]));
    const throughout = initial.filter((k) => !deleted.has(k));
    expect(
      throughout.filter((k) => !listed.includes(k)),
      "keys present throughout that the listing lost",
    ).toEqual([]);
    expect(
      listed.filter((k) => !ever.has(k)),
      "keys listed that never existed",
    ).toEqual([]);
  });

  it("a key deleted while the server reads its files for a page is left out, not a failed page", async () => {
    const { client } = smallPages();
    const prefix = `churn-${++counter}`;
    // One attempt: a page the server could not read is a failure here, not hidden by a retry.
    const lister = new S3Store({ bucket: server.bucket, prefix, client, retry: { maxAttempts: 1 } });
    const writer = new S3Store({ bucket: server.bucket, prefix, clientConfig: server.clientConfig });
    const all = Array.from({ length: 200 }, (_, i) => key(i));
    await Promise.all(all.map((k) => writer.put(k, body)));
    // Deletes sent beside each page request, so some land while the server lists and reads the page's files.
    const kept = new Set(all.filter((_, i) => i % 2 === 0));
    const doomed = all.filter((k) => !kept.has(k));
    const listed: string[] = [];
    let d = 0;
    const deletes: Promise<void>[] = [];
    for await (const o of lister.list("m/")) {
      listed.push(o.key);
      if (d < doomed.length) deletes.push(writer.delete(doomed[d++]!), writer.delete(doomed[d++]!));
    }
    await Promise.all(deletes);
    expect(listed).toEqual(sortedBytes([...new Set(listed)]));
    expect([...kept].filter((k) => !listed.includes(k))).toEqual([]);
  });
});
