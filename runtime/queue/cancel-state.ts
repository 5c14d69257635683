/**
 * @module The cancellation state of one claim, and the `cancelSignal`
 * property that makes its `AbortSignal` only when something reads it.
 *
 * Most claims are never cancelled and most workers never look at the
 * signal, so an `AbortController` per claim was allocation (and GC) on
 * every step for nothing. The runtime checks the plain flag instead.
 */

/** Anything with a `cancelSignal`: a claimed job, a step, a delivery. */
export interface CancelSource {
  readonly cancelSignal: AbortSignal;
}

/**
 * Where an object with a deferred `cancelSignal` keeps what the signal comes from (a hidden slot, see
 * `defineCancelSignal`); a source may have one too, down to the claim's `CancelState`.
 */
export const CANCEL_SOURCE: unique symbol = Symbol("taquba.cancelSource");

/** A claim's cancellation: the flag, and the signal made on first read. */
export class CancelState implements CancelSource {
  #reason: Error | undefined;
  #controller: AbortController | undefined;

  /** Whether a cancellation was requested. */
  get requested(): boolean {
    return this.#reason !== undefined;
  }

  /** Records the request and aborts the signal if it was made; a second request keeps the first reason. */
  request(reason: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  /** The signal, made on first read: already aborted (with the request's reason) when a request came first. */
  get cancelSignal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }
}

// One getter function and descriptor shared by every object: V8 then reuses one
// hidden-class transition for them all. An object literal with its own `get`
// accessor is built through V8's slow path and costs more than the signal saved.
const CANCEL_SIGNAL: PropertyDescriptor = {
  get(this: { readonly [CANCEL_SOURCE]: CancelSource }): AbortSignal {
    return this[CANCEL_SOURCE].cancelSignal;
  },
  enumerable: true,
};

/**
 * Adds to `target` an enumerable `cancelSignal` property that reads
 * `source.cancelSignal` when it is read (so a copy by spread still carries
 * the signal), and a hidden non-enumerable slot holding `source`. Call it
 * where `cancelSignal` belongs in the object's key order, before freezing.
 */
export function defineCancelSignal(target: object, source: CancelSource): void {
  Object.defineProperty(target, "cancelSignal", CANCEL_SIGNAL);
  Object.defineProperty(target, CANCEL_SOURCE, { value: source });
}

/** What `defineCancelSignal` gave `x` as its source, or undefined. */
export function cancelSourceOf(x: object): unknown {
  return (x as { readonly [CANCEL_SOURCE]?: unknown })[CANCEL_SOURCE];
}

/**
 * Whether cancellation was requested of `x` (a claimed job, or a step made
 * from one): what `x.cancelSignal.aborted` says, without making the signal
 * when the state behind it is at hand.
 */
export function cancelRequestedOf(x: CancelSource): boolean {
  let s: unknown = (x as { readonly [CANCEL_SOURCE]?: CancelSource })[CANCEL_SOURCE];
  // A step's source is its claimed job, whose source is its claim's ticket, whose source is the claim's state.
  while (s !== undefined && !(s instanceof CancelState)) s = (s as { readonly [CANCEL_SOURCE]?: CancelSource })[CANCEL_SOURCE];
  return s instanceof CancelState ? s.requested : x.cancelSignal.aborted;
}

/** `T` with its fields writable: an object filled in field by field before it is frozen or handed out read-only (one with a deferred `cancelSignal`, a history record, an outcome). */
export type Building<T> = { -readonly [K in keyof T]: T[K] };
