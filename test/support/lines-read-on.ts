/**
 * @module A child's printed lines read on from where the last look stopped.
 * The process scenarios' waits look every few milliseconds, and a worker
 * prints a line per write (thousands in a run): reading all of them at
 * every look cost the test process, which also serves the S3 protocol
 * server's requests, a fifth of its CPU time in the shard scenario.
 */

/** One reader's place in a child's lines (`ChildScript.lines`, which only grows). */
export class LinesReadOn {
  #read = 0;
  readonly #lines: readonly string[];

  constructor(lines: readonly string[]) {
    this.#lines = lines;
  }

  /** Hands `each` every line printed since the last call (all of them at the first), in order. */
  readOn(each: (line: string) => void): void {
    const lines = this.#lines;
    for (; this.#read < lines.length; this.#read++) each(lines[this.#read]!);
  }
}
