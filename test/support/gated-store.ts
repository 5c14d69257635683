/**
 * @module A test store wrapper that holds chosen puts until released, to
 * make WAL objects land out of order or late.
 */
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "taquba";

interface Held {
  key: string;
  release(): void;
}

export class GatedStore implements ObjectStore {
  readonly held: Held[] = [];
  #waiters: Array<() => void> = [];
  readonly #landed = new Set<string>();
  #landWaiters: Array<() => void> = [];

  constructor(
    readonly inner: ObjectStore,
    public hold: (key: string) => boolean = () => false,
  ) {}

  /** Resolves once `n` puts are being held. */
  async waitHeld(n: number): Promise<void> {
    while (this.held.length < n) await new Promise<void>((r) => this.#waiters.push(r));
  }

  /**
   * Resolves once the put of `key` has returned to its caller (stored, and
   * the caller's continuation queued), plus one turn of the event loop, so
   * everything the caller did in reaction without further IO has happened.
   */
  async landed(key: string): Promise<void> {
    while (!this.#landed.has(key)) await new Promise<void>((r) => this.#landWaiters.push(r));
    await new Promise<void>((r) => setImmediate(r));
  }

  /** Lets the held put of `key` proceed. */
  release(key: string): void {
    const i = this.held.findIndex((h) => h.key === key);
    if (i < 0) throw new Error(`no held put for ${key}`);
    this.held.splice(i, 1)[0]!.release();
  }

  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(key);
  }

  async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (this.hold(key)) {
      await new Promise<void>((release) => {
        this.held.push({ key, release });
        for (const w of this.#waiters.splice(0)) w();
      });
    }
    const result = await this.inner.put(key, body, opts);
    this.#landed.add(key);
    for (const w of this.#landWaiters.splice(0)) w();
    return result;
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    return this.inner.list(prefix, opts);
  }
}
