/**
 * @module Marks from inside LocalStore's put thread, for the benches that
 * cut a step's time into parts. The thread makes a put's system calls
 * synchronously in a worker, where the main thread's hooks on node:fs see
 * nothing: the thread is started from a copy of its program that marks
 * when a put begins, when its write, link and fsyncs return, into a buffer
 * shared with the main thread. Marks carry `process.hrtime`, one monotonic
 * clock for every thread of the process, so they sort with the main
 * thread's marks (`nowMs`).
 *
 * Install with `markPutThread()` before the first LocalStore put (the
 * thread is started by the first put that takes it).
 */
import { syncBuiltinESMExports } from "node:module";
import workerThreads from "node:worker_threads";
import { PUT_WORKER_SOURCE } from "../../runtime/store/local-put-worker.js";

/** What the thread marks: a put picked up, a write returned, the link returned, an fsync returned. */
export const THREAD_KINDS = ["threadWoke", "threadWritten", "threadLinked", "threadSynced"] as const;
export type ThreadKind = (typeof THREAD_KINDS)[number];

/** Milliseconds on the clock the thread's marks use. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Marks the buffer holds; later ones are counted and dropped. */
const CAPACITY = 1 << 18;

/** Marks taken between two `position()`s, and how many did not fit. */
export interface ThreadMarks {
  marks: { t: number; kind: ThreadKind }[];
  dropped: number;
}

export interface PutThreadMarker {
  /** Marks made so far: pass to `since` to leave out a warm-up's. */
  position(): number;
  /** The marks made after `from`, in the order the thread made them. */
  since(from: number): ThreadMarks;
}

/** The thread's program with marks added: run before it, the prefix wraps the node:fs calls the program makes. */
function markedSource(): string {
  const head = '"use strict";\n';
  const putStart = "function put() {\n";
  if (!PUT_WORKER_SOURCE.startsWith(head) || !PUT_WORKER_SOURCE.includes(putStart))
    throw new Error("the put thread's program changed shape: update bench/support/put-thread-marks.ts");
  const prefix = `(() => {
  const { workerData } = require("node:worker_threads");
  const count = new Int32Array(workerData.benchMarks, 0, 2);
  const at = new Float64Array(workerData.benchMarks, 8);
  globalThis.__benchMark = (kind) => {
    const i = Atomics.add(count, 0, 1);
    if (i < ${CAPACITY}) {
      at[2 * i] = Number(process.hrtime.bigint()) / 1e6;
      at[2 * i + 1] = kind;
    }
  };
  const fs = require("node:fs");
  for (const [name, kind] of [["writeSync", 1], ["linkSync", 2], ["fsyncSync", 3]]) {
    const call = fs[name];
    fs[name] = (...args) => {
      const r = call(...args);
      globalThis.__benchMark(kind);
      return r;
    };
  }
})();
`;
  return head + prefix + PUT_WORKER_SOURCE.slice(head.length).replace(putStart, `${putStart}  globalThis.__benchMark(0);\n`);
}

/** Starts LocalStore's put thread from the marked program from now on; call before its first put. */
export function markPutThread(): PutThreadMarker {
  const shared = new SharedArrayBuffer(8 + 16 * CAPACITY);
  const count = new Int32Array(shared, 0, 2);
  const at = new Float64Array(shared, 8);
  const module = workerThreads as unknown as { Worker: typeof workerThreads.Worker };
  const Original = module.Worker;
  class MarkedWorker extends Original {
    constructor(source: string | URL, options?: workerThreads.WorkerOptions) {
      if (source === PUT_WORKER_SOURCE && options?.eval === true)
        super(markedSource(), { ...options, workerData: { ...(options.workerData as object), benchMarks: shared } });
      else super(source, options);
    }
  }
  module.Worker = MarkedWorker;
  // LocalStore's named import of Worker follows once synced.
  syncBuiltinESMExports();
  return {
    position: () => Atomics.load(count, 0),
    since(from) {
      const to = Atomics.load(count, 0);
      const marks: ThreadMarks["marks"] = [];
      for (let i = from; i < Math.min(to, CAPACITY); i++) marks.push({ t: at[2 * i]!, kind: THREAD_KINDS[at[2 * i + 1]!]! });
      return { marks, dropped: Math.max(0, to - Math.max(from, CAPACITY)) };
    },
  };
}
