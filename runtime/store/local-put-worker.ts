/**
 * @module The program of LocalStore's put thread, as source text: the
 * thread is started from it (`new Worker(source, { eval: true })`), so it
 * needs no file of its own beside the compiled or bundled module that
 * starts it. It runs a put's system calls synchronously, in the order a
 * put through the thread pool makes them (local-store.ts), except that the
 * closes come after the answer, and answers through the buffer it shares
 * with the main thread (local-put-thread.ts describes the layout).
 *
 * A create-if-absent put removes its temporary name before the directory
 * fsync, as the pool's way does: the fsync then writes the directory with
 * the object's name alone. Removed after it, the name would stay in the
 * directory on disk beside the object's until a later write of that block,
 * while the file's inode on disk (written by the `O_DSYNC` write, before
 * the link) counts one name: after a power loss on a file system without a
 * journal, the open's removal of that leftover would then free the file the
 * object's name points at.
 *
 * A request may name the next put's temporary file: the thread creates it
 * (empty, opened as a put opens its file) after its tidy-up, while the main
 * thread works, and the next put whose temporary name is that one writes
 * into it instead of creating a file. Any other request drops it (closed,
 * its name removed), and so does `stop`. The crash states are those of a
 * put that died between its create and its write: an empty temporary name,
 * never listed, removed at the next open.
 *
 * The file made ahead is also fsynced there, while the put's requests leave
 * room for it (`SYNC_AHEAD_POLICY`): on ext4 without a journal, the first
 * sync of a new file writes its directory's block as well (the name's
 * entry), so without this each put's `O_DSYNC` write waits for three disk
 * writes (data, inode, directory) instead of two; with a journal it commits
 * the create's transaction before the put's own. Only an empty temporary
 * name is made durable earlier: the put's write, link and directory fsync,
 * and so what an acknowledged put guarantees, are unchanged.
 */

/** Slots of the shared buffer's control words (Int32). */
export const SLOT = {
  /** 0 idle, 1 a request is waiting, 2 it was answered, 3 stop, 4 the thread stopped unanswered (see `STATE`). */
  state: 0,
  /** Body length in bytes (request). */
  bodyLength: 1,
  /** Length in bytes of the four paths after the body (request); of the error text (answer). */
  textLength: 2,
  /** 1 for a create-if-absent put (link), 0 to replace (rename); answer: the outcome, see `OUTCOME`. */
  flags: 3,
  /** 1 from the answer until the tidy-up after it is done (closes, the next put's file made and maybe synced). */
  tidy: 4,
  /** How many files made ahead the thread fsynced (benches and tests). */
  syncedAhead: 5,
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

/**
 * `stop`: end once the last put's tidy-up (after its answer) is done, its
 * file for the next put dropped; set by `close()` when no put is in flight.
 * `lost`: set by the main thread, in place of `asked`, once the thread
 * stopped with a put in flight unanswered; it ends that put's wait.
 */
export const STATE = { idle: 0, asked: 1, answered: 2, stop: 3, lost: 4 } as const;

/** Control words: 6 Int32 (24 bytes), so that the stat answer (3 BigInt64) after them is aligned. */
export const CONTROL_WORDS = 6;
/** Where the stat answer starts, in bytes. */
export const STAT_OFFSET = 24;
/** Bytes of the control words and of the stat answer before the data area. */
export const HEADER_BYTES = STAT_OFFSET + 24;

/**
 * Whether the tidy-up after the next answer fsyncs the file it makes ahead,
 * decided when a request is picked up: `gapNs` the time from the last
 * answer until then (a request made during the tidy-up is picked up at its
 * end), `tidyNs` what that tidy-up took without its sync, `syncNs` what the
 * last sync ahead took. Syncing goes on while the gap holds the tidy-up and
 * two syncs (a margin), so one run at a time (the next request right after
 * the answer) or a busy disk turns it off. `syncNs` loses an eighth at each
 * tidy-up without a sync (`decayedSyncNs`): a sync that took long once is
 * tried again after some puts (a dozen or more), and where the gaps stay
 * short only that put waits for it. Source text, for the thread and tests.
 */
export const SYNC_AHEAD_POLICY = `function nextSyncAhead(gapNs, tidyNs, syncNs) {
  return gapNs >= tidyNs + 2 * syncNs;
}
function decayedSyncNs(syncNs) {
  return syncNs - syncNs / 8;
}`;

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
const ctl = new Int32Array(workerData.buffer, 0, ${CONTROL_WORDS});
const stat = new BigInt64Array(workerData.buffer, ${STAT_OFFSET}, 3);
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
  answeredNs = process.hrtime.bigint();
}
function quietly(call) {
  try { call(); } catch {}
}
const CREATE = C.O_WRONLY | C.O_CREAT | C.O_EXCL | (O_DSYNC ?? 0);
/** The next put's temporary file, made ahead: { path, fd }, or undefined. */
let spare;
function dropSpare() {
  if (spare === undefined) return;
  const { path, fd } = spare;
  spare = undefined;
  quietly(() => fs.closeSync(fd));
  quietly(() => fs.unlinkSync(path));
}
${SYNC_AHEAD_POLICY}
/** Whether this tidy-up fsyncs the file it makes ahead; when the last answer was given; see SYNC_AHEAD_POLICY for the rest. */
let syncAhead = true;
let answeredNs = 0n;
let tidyNs = 0;
let syncNs = 0;
/** Whether the put's file was made ahead (and sat under its name between puts). */
let madeAhead = false;
/** The put's file: the one made ahead when the request names it, else a new one. */
function openTemp(temp) {
  madeAhead = false;
  if (spare !== undefined && spare.path === temp) {
    const fd = spare.fd;
    spare = undefined;
    madeAhead = true;
    return fd;
  }
  dropSpare();
  return fs.openSync(temp, CREATE, 0o644);
}
function put() {
  const n = ctl[${SLOT.bodyLength}];
  const createOnly = ctl[${SLOT.flags}] === 1;
  const [temp, target, dir, next] = decoder.decode(data.subarray(n, n + ctl[${SLOT.textLength}])).split("\\0");
  const body = data.subarray(0, n);
  let fd;
  try {
    fd = openTemp(temp);
    for (let done = 0; done < n; ) done += fs.writeSync(fd, body, done, n - done, done);
    if (O_DSYNC === undefined || n === 0) fs.fsyncSync(fd);
    const st = fs.fstatSync(fd, { bigint: true });
    // A file made ahead sat under its name between puts: one that grew meanwhile was written to by another program.
    if (st.size !== BigInt(n)) {
      throw Object.assign(new Error("the temporary file " + temp + " held " + st.size + " bytes after a write of " + n + ": another program wrote to it"), { path: temp });
    }
    // Its name may also have been given to another file meanwhile (removed and made again, or renamed over):
    // the link below goes by name, and would store that file's bytes.
    if (madeAhead && fs.lstatSync(temp, { bigint: true }).ino !== st.ino) {
      throw Object.assign(new Error("the temporary file " + temp + " was replaced by another program's file between puts"), { path: temp });
    }
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
  // Before the directory fsync (see the module documentation); a failed removal leaves a leftover, removed at open.
  if (createOnly) quietly(() => fs.unlinkSync(temp));
  let dfd;
  let syncError;
  try {
    dfd = fs.openSync(dir, "r");
    fs.fsyncSync(dfd);
  } catch (err) {
    syncError = err;
  }
  Atomics.store(ctl, ${SLOT.tidy}, 1);
  if (syncError === undefined) answer(${OUTCOME.done});
  else answer(${OUTCOME.failedSync}, syncError);
  // After the answer: neither changes what the put did or its durability, and each costs a file table lock.
  if (dfd !== undefined) quietly(() => fs.closeSync(dfd));
  quietly(() => fs.closeSync(fd));
  // The next put's file, made while the main thread works on what this answer released; when that fails,
  // the next put creates its own (and meets the same failure there, if it lasts).
  if (next) {
    try {
      spare = { path: next, fd: fs.openSync(next, CREATE, 0o644) };
    } catch {}
  }
  const syncStart = process.hrtime.bigint();
  tidyNs = Number(syncStart - answeredNs);
  // Its name's directory entry written now, off the next put's path (see the module documentation).
  if (spare !== undefined && syncAhead) {
    try {
      fs.fsyncSync(spare.fd);
      Atomics.add(ctl, ${SLOT.syncedAhead}, 1);
    } catch {
      // A failed sync may have taken the file's writeback error with it: the next put makes a new file.
      dropSpare();
    }
    syncNs = Number(process.hrtime.bigint() - syncStart);
  } else syncNs = decayedSyncNs(syncNs);
  Atomics.store(ctl, ${SLOT.tidy}, 0);
  Atomics.notify(ctl, ${SLOT.tidy});
}
for (;;) {
  const state = Atomics.load(ctl, ${SLOT.state});
  if (state === ${STATE.asked}) {
    syncAhead = nextSyncAhead(Number(process.hrtime.bigint() - answeredNs), tidyNs, syncNs);
    put();
  } else if (state === ${STATE.stop}) {
    dropSpare();
    break;
  } else {
    Atomics.wait(ctl, ${SLOT.state}, state);
  }
}
`;
