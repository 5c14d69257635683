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

/** What `defineCancelSignal` gave `x` as its source, or what `SourceSlot.give` gave it, or undefined. */
export function cancelSourceOf(x: object): unknown {
  return SourceSlot.sourceIn(x) ?? (x as { readonly [CANCEL_SOURCE]?: unknown })[CANCEL_SOURCE];
}

/**
 * A base whose constructor hands back the object it is given: a subclass's
 * private fields are then defined on that object, with no key, descriptor,
 * prototype or printed form of its own.
 */
class ObjectGivenBack {
  constructor(o: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the point of the class (see above).
    return o;
  }
}

/**
 * A cancel source kept in a private slot of the object it serves (a claimed
 * job): set by assignment, where `defineCancelSignal`'s hidden symbol slot
 * takes an `Object.defineProperty` call with a descriptor made per object.
 * Like that slot, a spread copy does not carry it; unlike it, neither an
 * object inheriting from its holder nor a Proxy of it shows it (the holder's
 * own module answers for those).
 */
export class SourceSlot extends ObjectGivenBack {
  readonly #source: CancelSource;

  private constructor(o: object, source: CancelSource) {
    super(o);
    this.#source = source;
  }

  /** Gives `o` its source; once, before `o` is frozen. */
  static give(o: object, source: CancelSource): void {
    new SourceSlot(o, source);
  }

  /** The source `give` gave `o` itself, or undefined. */
  static sourceIn(o: object): CancelSource | undefined {
    return #source in o ? o.#source : undefined;
  }
}

/**
 * Whether cancellation was requested of `x` (a claimed job, or a step made
 * from one): what `x.cancelSignal.aborted` says, without making the signal
 * when the state behind it is at hand.
 */
export function cancelRequestedOf(x: CancelSource): boolean {
  let s: unknown = cancelSourceOf(x);
  // A step's source is its claimed job, whose source is its claim's ticket, whose source is the claim's state.
  while (typeof s === "object" && s !== null && !(s instanceof CancelState)) s = cancelSourceOf(s);
  return s instanceof CancelState ? s.requested : x.cancelSignal.aborted;
}

/** `T` with its fields writable: an object filled in field by field before it is frozen or handed out read-only (one with a deferred `cancelSignal`, a history record, an outcome). */
export type Building<T> = { -readonly [K in keyof T]: T[K] };
