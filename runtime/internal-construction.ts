/**
 * @module Constructors only the package calls: TypeScript hides them
 * (private or marked internal), JavaScript does not. The class checks a
 * gate that is open only while its own entry point (an `open`, a builder,
 * a `run...` function) builds one, so a direct `new` is a `ValidationError`
 * naming the entry point to use, never a TypeError from deep inside on
 * arguments the constructor was not written to check.
 */
import { ValidationError } from "./errors.js";

/** The gate of one class's constructor. */
export class ConstructionGate {
  readonly #what: string;
  readonly #use: string;
  #open = 0;

  /** `what` is the class as users name it; `use` says what to call instead ("use Engine.open(store, options)"). */
  constructor(what: string, use: string) {
    this.#what = what;
    this.#use = use;
  }

  /** Runs `make` (a `new` of the class) with the gate open. */
  build<T>(make: () => T): T {
    this.#open++;
    try {
      return make();
    } finally {
      this.#open--;
    }
  }

  /** Throws `ValidationError` unless a `build` is under way; the constructor's first statement. */
  check(): void {
    if (this.#open === 0) throw new ValidationError(`new ${this.#what}(...) is internal to taquba: ${this.#use}`);
  }
}
