/**
 * @module The program of LocalStore's put thread, as source text: the
 * thread is started from it (`new Worker(source, { eval: true })`), so it
 * needs no file of its own beside the compiled or bundled module that
 * starts it. It runs a put's system calls synchronously, in the order a
 * put through the thread pool makes them (local-store.ts), and answers
 * through the buffer it shares with the main thread (local-put-thread.ts
 * describes the layout).
 */

/** Slots of the shared buffer's control words (Int32). */
export const SLOT = {
  /** 0 idle, 1 a request is waiting, 2 it was answered. */
  state: 0,
  /** Body length in bytes (request). */
  bodyLength: 1,
  /** Length in bytes of the three paths after the body (request); of the error text (answer). */
  textLength: 2,
  /** 1 for a create-if-absent put (link), 0 to replace (rename); answer: the outcome, see `OUTCOME`. */
  flags: 3,
} as const;

/** What a request's answer says in the `flags` slot. */
export const OUTCOME = {
  /** Whole and durable: the stat words hold the file's inode, size and modification time. */
  done: 0,
  /** Failed before the final name pointed at the file: no object, no temporary file (unless its removal failed too). */
  failedBefore: 1,
  /** The object is in place (the stat words hold its file's), but the directory fsync after it failed. */
  failedSync: 2,
} as const;

export const STATE = { idle: 0, asked: 1, answered: 2 } as const;

/** Bytes of the control words (4 Int32) and of the stat answer (3 BigInt64) before the data area. */
export const HEADER_BYTES = 16 + 24;

/**
 * The thread's program (CommonJS, as `eval` workers run). Errors are
 * answered as "code\0syscall\0path\0message" so that the main thread
 * rebuilds them and maps them as it maps its own calls' errors.
 */
export const PUT_WORKER_SOURCE = `"use strict";
const { workerData } = require("node:worker_threads");
const fs = require("node:fs");
const C = fs.constants;
const O_DSYNC = C.O_DSYNC;
const ctl = new Int32Array(workerData.buffer, 0, 4);
const stat = new BigInt64Array(workerData.buffer, 16, 3);
const data = new Uint8Array(workerData.buffer, ${HEADER_BYTES});
const decoder = new TextDecoder();
const encoder = new TextEncoder();
function answer(outcome, err) {
  if (err !== undefined) {
    const text = [err.code ?? "", err.syscall ?? "", err.path ?? "", String(err.message ?? err)].join("\\0");
    ctl[${SLOT.textLength}] = encoder.encodeInto(text, data).written;
  }
  ctl[${SLOT.flags}] = outcome;
  Atomics.store(ctl, ${SLOT.state}, ${STATE.answered});
  Atomics.notify(ctl, ${SLOT.state});
}
function quietly(call) {
  try { call(); } catch {}
}
function put() {
  const n = ctl[${SLOT.bodyLength}];
  const createOnly = ctl[${SLOT.flags}] === 1;
  const [temp, target, dir] = decoder.decode(data.subarray(n, n + ctl[${SLOT.textLength}])).split("\\0");
  const body = data.subarray(0, n);
  let fd;
  try {
    fd = fs.openSync(temp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | (O_DSYNC ?? 0), 0o644);
    for (let done = 0; done < n; ) done += fs.writeSync(fd, body, done, n - done, done);
    if (O_DSYNC === undefined || n === 0) fs.fsyncSync(fd);
    const st = fs.fstatSync(fd, { bigint: true });
    stat[0] = st.ino;
    stat[1] = st.size;
    stat[2] = st.mtimeNs;
    if (createOnly) fs.linkSync(temp, target);
    else fs.renameSync(temp, target);
  } catch (err) {
    if (fd !== undefined) {
      quietly(() => fs.closeSync(fd));
      quietly(() => fs.unlinkSync(temp));
    }
    return answer(${OUTCOME.failedBefore}, err);
  }
  quietly(() => fs.closeSync(fd));
  if (createOnly) quietly(() => fs.unlinkSync(temp));
  try {
    const dfd = fs.openSync(dir, "r");
    try { fs.fsyncSync(dfd); } finally { quietly(() => fs.closeSync(dfd)); }
  } catch (err) {
    return answer(${OUTCOME.failedSync}, err);
  }
  answer(${OUTCOME.done});
}
for (;;) {
  const state = Atomics.load(ctl, ${SLOT.state});
  if (state === ${STATE.asked}) put();
  else Atomics.wait(ctl, ${SLOT.state}, state);
}
`;
