/**
 * @module A store whose manifest puts can be held after they landed: the
 * fenced-writer tests pause a writer between its manifest's put landing and
 * the put returning, open a newer writer meanwhile, then let it go on.
 */
import type { PutOptions } from "taquba";
import { ForwardingStore } from "./forwarding-store.js";

/** Manifest puts made while `holding` land, then wait for `release()` before returning. */
export class HeldManifestPuts extends ForwardingStore {
  holding = false;
  /** The manifests whose held puts landed, in order. */
  readonly landed: string[] = [];
  #release: Array<() => void> = [];
  #onLanded: Array<() => void> = [];

  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    const result = await this.inner.put(key, body, opts);
    if (this.holding && key.startsWith("manifest/")) {
      this.landed.push(key);
      for (const w of this.#onLanded.splice(0)) w();
      await new Promise<void>((r) => this.#release.push(r));
    }
    return result;
  }

  /** Resolves, with its key, once the first held manifest put has landed. */
  async waitLanded(): Promise<string> {
    while (this.landed.length === 0) await new Promise<void>((r) => this.#onLanded.push(r));
    return this.landed[0]!;
  }

  /** Stops holding, and lets the held puts return. */
  release(): void {
    this.holding = false;
    for (const r of this.#release.splice(0)) r();
  }
}
