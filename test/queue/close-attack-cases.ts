/**
 * @module What the close attacks share: the stores they run over (a
 * LocalStore, and s3rver under a fresh prefix), each with the options and
 * rounds of its attack.
 */
import { LocalStore, S3Store, type ObjectStore, type OpenOptions } from "taquba";
import type { SharedS3Server } from "../support/use-s3-server.js";

/** A case: its name, a maker of fresh stores (and the same store again for the reopen), options, rounds. */
export type CloseCase = [string, () => Promise<() => ObjectStore>, OpenOptions, number];

/** A LocalStore over a fresh temporary directory per round. */
export function localStoreCase(tempDir: () => Promise<string>, opts: OpenOptions, rounds: number): CloseCase {
  return [
    "a LocalStore",
    async () => {
      const dir = await tempDir();
      return () => new LocalStore(dir);
    },
    opts,
    rounds,
  ];
}

/** s3rver under a fresh prefix per round (starting with `stem`). */
export function s3Case(name: string, server: SharedS3Server, stem: string, opts: OpenOptions, rounds: number): CloseCase {
  return [
    name,
    async () => {
      const prefix = `${stem}-${Math.random().toString(36).slice(2)}`;
      return () => new S3Store({ bucket: server.bucket, prefix, clientConfig: server.clientConfig });
    },
    opts,
    rounds,
  ];
}
