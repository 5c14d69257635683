/**
 * @module The process's resident memory by kind of mapping, from
 * /proc/self/smaps (Linux; null elsewhere), to say what the part of RSS
 * outside V8's heap and array buffers is made of:
 *
 * - `file`: file-backed pages (node's binary and the shared libraries).
 * - `brk`: the main malloc arena (the `[heap]` mapping).
 * - `arenas`: glibc's per-thread malloc arenas, mappings inside a 64 MiB
 *   aligned reservation (each thread that mallocs takes one, up to eight
 *   per core).
 * - `stacks`: the main stack and thread stacks (a mapping right after a
 *   small no-access guard; V8's guarded code pages, if any, land here too).
 * - `anonOther`: every other anonymous mapping: V8's heap pages (both
 *   isolates'), its code space, and malloc's blocks above the mmap
 *   threshold (large array buffers' backing stores).
 *
 * Also the count of mappings and of thread arenas, the process's thread
 * count, and the anonymous huge pages.
 */
import { readFileSync } from "node:fs";

export interface SmapsBreakdown {
  file: number;
  brk: number;
  arenas: number;
  stacks: number;
  anonOther: number;
  /** Of all the above, pages in anonymous transparent huge pages. */
  hugePages: number;
  mappings: number;
  arenaCount: number;
  threads: number;
}

/** glibc's non-main arena heaps are reserved 64 MiB at a time (HEAP_MAX_SIZE on 64-bit), aligned to it. */
const ARENA_HEAP = 64 * 1024 * 1024;
/** The largest guard below a thread stack taken for one (glibc's default is one page; V8 and libuv keep it). */
const GUARD_MAX = 64 * 1024;

interface Mapping {
  start: number;
  end: number;
  perms: string;
  path: string;
  rss: number;
  huge: number;
}

function readMappings(): Mapping[] | null {
  let text: string;
  try {
    text = readFileSync("/proc/self/smaps", "latin1");
  } catch {
    return null;
  }
  const out: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of text.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head !== null) {
      cur = { start: Number.parseInt(head[1]!, 16), end: Number.parseInt(head[2]!, 16), perms: head[3]!, path: head[4]!, rss: 0, huge: 0 };
      out.push(cur);
      continue;
    }
    if (cur === undefined) continue;
    if (line.startsWith("Rss:")) cur.rss = Number(/\d+/.exec(line)![0]) * 1024;
    else if (line.startsWith("AnonHugePages:")) cur.huge = Number(/\d+/.exec(line)![0]) * 1024;
  }
  return out;
}

export function smapsBreakdown(): SmapsBreakdown | null {
  const maps = readMappings();
  if (maps === null) return null;
  const b: SmapsBreakdown = { file: 0, brk: 0, arenas: 0, stacks: 0, anonOther: 0, hugePages: 0, mappings: maps.length, arenaCount: 0, threads: 0 };
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i]!;
    b.hugePages += m.huge;
    if (m.path.startsWith("/")) b.file += m.rss;
    else if (m.path === "[heap]") b.brk += m.rss;
    else if (m.path === "[stack]") b.stacks += m.rss;
    else if (m.path !== "") b.anonOther += m.rss;
    else if (inArenaHeap(maps, i)) {
      b.arenas += m.rss;
      if (m.perms.startsWith("rw") && m.start % ARENA_HEAP === 0) b.arenaCount++;
    } else if (afterGuard(maps, i)) b.stacks += m.rss;
    else b.anonOther += m.rss;
  }
  try {
    b.threads = Number(/^Threads:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
  } catch {}
  return b;
}

/** Whether mapping `i` lies in a 64 MiB aligned reservation that an rw mapping opens and contiguous mappings fill. */
function inArenaHeap(maps: Mapping[], i: number): boolean {
  // Walk back over contiguous anonymous mappings to the reservation's first one.
  let j = i;
  while (j > 0 && maps[j - 1]!.end === maps[j]!.start && maps[j - 1]!.path === "" && maps[j]!.start % ARENA_HEAP !== 0) j--;
  const first = maps[j]!;
  if (first.start % ARENA_HEAP !== 0 || !first.perms.startsWith("rw")) return false;
  // The reservation spans exactly 64 MiB of contiguous mappings (the rw part and the ---p rest).
  let end = first.end;
  for (let k = j + 1; k < maps.length && maps[k]!.start === end && maps[k]!.path === "" && end - first.start < ARENA_HEAP; k++) end = maps[k]!.end;
  return end - first.start === ARENA_HEAP && maps[i]!.end <= end;
}

function afterGuard(maps: Mapping[], i: number): boolean {
  const m = maps[i]!;
  const prev = maps[i - 1];
  return m.perms.startsWith("rw") && prev !== undefined && prev.end === m.start && prev.perms.startsWith("---") && prev.end - prev.start <= GUARD_MAX;
}

/** "file 40, brk 12, arenas 30 (9), stacks 1, other anon 150, huge 0; 310 mappings, 11 threads" in MB. */
export function formatBreakdown(b: SmapsBreakdown): string {
  const f = (n: number) => (n / 1024 / 1024).toFixed(0);
  return `file ${f(b.file)}, brk ${f(b.brk)}, arenas ${f(b.arenas)} (${b.arenaCount}), stacks ${f(b.stacks)}, other anon ${f(b.anonOther)}, huge ${f(b.hugePages)}; ${b.mappings} mappings, ${b.threads} threads`;
}
