/**
 * @module The batches the engine crash writers commit, and the checks of a
 * store reopened after one was killed: each batch writes three keys of one
 * id, the loop's counter, and moves the loop's marker on (a put and a
 * delete, so deletes cross checkpoints as tombstones). Shared by the child
 * processes (no test runner there) and the tests that check what they left.
 */
import { WriteBatch } from "../../runtime/engine/write-batch.js";

const enc = new TextEncoder();

/** Loop `w`'s `i`th batch of a writer tagged `tag`; its id is `<tag>-<w>-<i>`. */
export function crashBatch(tag: string, w: number, i: number): WriteBatch {
  const id = `${tag}-${w}-${i}`;
  const value = enc.encode(id);
  return new WriteBatch()
    .put(`b/${id}/1`, value)
    .put(`b/${id}/2`, value)
    .put(`b/${id}/3`, value)
    .put(`last/${tag}-${w}`, enc.encode(String(i)))
    .put(`x/${tag}-${w}/${String(i).padStart(9, "0")}`, value)
    .delete(`x/${tag}-${w}/${String(i - 1).padStart(9, "0")}`);
}

/**
 * Commits loop `w`'s batches one after another, printing `D <id>` once each
 * is durable; a failed commit prints `F <error name>` and ends the loop, as
 * does `stop` (asked before each batch).
 */
export async function commitUntilFailure(
  engine: { commit(batch: WriteBatch): Promise<unknown> },
  tag: string,
  w: number,
  stop = (): boolean => false,
): Promise<void> {
  for (let i = 1; !stop(); i++) {
    try {
      await engine.commit(crashBatch(tag, w, i));
    } catch (err) {
      process.stdout.write(`F ${(err as Error).name}\n`);
      return;
    }
    process.stdout.write(`D ${tag}-${w}-${i}\n`);
  }
}
