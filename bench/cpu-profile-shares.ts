/**
 * @module Shares of busy samples in a `node --cpu-prof` profile: the TOP
 * functions by self time, the self and inclusive share of each function
 * named in NAMES (comma separated; `name` matches the function name
 * exactly, `name@part` also needs `part` in its file's path), and the self
 * share of all functions in files whose path contains one of FILES (comma
 * separated; inlined callees count in their caller's file), and with
 * CALLEES=name (same form as in NAMES) the inclusive share of each function
 * the named one calls, to DEPTH levels (2): where a function's time goes.
 * Busy: every
 * sample but `(idle)` and `(program)`; shares are of those, so a profile
 * taken under other load compares with one taken quiet.
 *
 * Run: `TOP=25 NAMES=processStep,get@layered-state FILES=sorted-btree,memtable npx tsx bench/cpu-profile-shares.ts <file.cpuprofile>`,
 * `CALLEES=commit@runtime/engine/engine DEPTH=2 npx tsx bench/cpu-profile-shares.ts <file.cpuprofile>`.
 *
 * A profile of an esbuild bundle (one file, where tsx's per-module frames
 * cost the heap and the collector more than the code does): BUNDLE=<the
 * bundle> names each of its frames by the source module esbuild marked it
 * with (its `// runtime/...` comments), so FILES and `name@part` match the
 * module, and MODULES=<n> prints the n modules with the most self time.
 * `BUNDLE=bench/.out/peer.mjs MODULES=30 FILES=runtime/engine/,runtime/store/ npx tsx bench/cpu-profile-shares.ts <file.cpuprofile>`.
 *
 * LAYERS=1 adds each busy sample's layer (the innermost frame of the
 * project on its stack: runtime/ by folder, the workflow by subfolder,
 * msgpackr apart), so node's built-ins count for the layer that called them:
 * `BUNDLE=bench/.out/peer.mjs LAYERS=1 npx tsx bench/cpu-profile-shares.ts <file.cpuprofile>`.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const file = process.argv[2];
if (file === undefined) throw new Error("name a .cpuprofile file");
const top = Number(process.env.TOP ?? 25);
const names = (process.env.NAMES ?? "").split(",").filter((s) => s !== "");
const files = (process.env.FILES ?? "").split(",").filter((s) => s !== "");
const matches = (name: string, n: ProfileNode) => {
  const [fn, part] = name.split("@");
  return n.callFrame.functionName === fn && (part === undefined || n.callFrame.url.includes(part));
};
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** The source module of each line of BUNDLE, from the `// <path>` line esbuild writes before each module's code. */
const bundle = process.env.BUNDLE;
const bundleName = bundle?.replace(/^.*\//, "");
const moduleStarts: { line: number; path: string }[] = [];
if (bundle !== undefined) {
  const lines = readFileSync(bundle, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = /^\/\/ ((?:runtime|bench|node_modules|src)\/\S+)$/.exec(lines[i]!);
    if (m !== null) moduleStarts.push({ line: i, path: m[1]! });
  }
}
/** The module whose code holds zero-based `line` of the bundle (the last marker at or before it). */
function moduleAt(line: number): string {
  let lo = 0;
  let hi = moduleStarts.length - 1;
  let found = "(bundle)";
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (moduleStarts[mid]!.line <= line) {
      found = moduleStarts[mid]!.path;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}
// A bundled frame's url names the bundle; it is given its source module's path instead, for labels and matches.
if (bundleName !== undefined) {
  for (const n of profile.nodes) if (n.callFrame.url.endsWith(`/${bundleName}`)) n.callFrame.url = moduleAt(n.callFrame.lineNumber);
}

const label = (n: ProfileNode) => {
  const url = n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, "$1/");
  return `${n.callFrame.functionName || "(anonymous)"} ${url}:${n.callFrame.lineNumber + 1}`;
};

const self = new Map<string, number>();
const selfByName = new Map<string, number>();
let inFiles = 0;
const inclusiveByName = new Map<string, number>();
let busy = 0;
const selfByModule = new Map<string, number>();
for (const id of profile.samples) {
  const n = byId.get(id)!;
  const fn = n.callFrame.functionName;
  if (fn === "(idle)" || fn === "(program)") continue;
  busy++;
  // Outside the bundle: node's own modules by file, native and V8 entries by name ("(garbage collector)").
  const module = n.callFrame.url === "" ? fn : n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, "$1/");
  selfByModule.set(module, (selfByModule.get(module) ?? 0) + 1);
  self.set(label(n), (self.get(label(n)) ?? 0) + 1);
  for (const name of names) if (matches(name, n)) selfByName.set(name, (selfByName.get(name) ?? 0) + 1);
  if (files.some((f) => n.callFrame.url.includes(f))) inFiles++;
  // Each named function once per sample, however deep it recurses.
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const node = byId.get(at)!;
    for (const name of names) {
      if (seen.has(name) || !matches(name, node)) continue;
      seen.add(name);
      inclusiveByName.set(name, (inclusiveByName.get(name) ?? 0) + 1);
    }
  }
}
const pct = (x: number) => `${((100 * x) / busy).toFixed(2)} %`;
console.log(`${busy} busy samples of ${profile.samples.length}`);
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v).padStart(8)}  ${k}`);
const modules = Number(process.env.MODULES ?? 0);
if (modules > 0) {
  console.log("self by module:");
  for (const [k, v] of [...selfByModule].sort((a, b) => b[1] - a[1]).slice(0, modules)) console.log(`${pct(v).padStart(8)}  ${k}`);
}
if (files.length > 0) console.log(`self in ${files.join(", ")}: ${pct(inFiles)}`);
for (const name of names) console.log(`${name}: self ${pct(selfByName.get(name) ?? 0)}, inclusive ${pct(inclusiveByName.get(name) ?? 0)}`);

// Callees of one function: each sample under it counts once for every distinct call path below it, to DEPTH levels.
const callees = process.env.CALLEES;
if (callees !== undefined) {
  const depth = Number(process.env.DEPTH ?? 2);
  const under = new Map<string, number>();
  let total = 0;
  for (const id of profile.samples) {
    const n = byId.get(id)!;
    const fn = n.callFrame.functionName;
    if (fn === "(idle)" || fn === "(program)") continue;
    const chain: ProfileNode[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) chain.push(byId.get(at)!);
    // The outermost call of the named function on this stack, then the frames it called, outermost first.
    const top = chain.findLastIndex((node) => matches(callees, node));
    if (top < 0) continue;
    total++;
    let path = "";
    for (let d = 1; d <= depth && top - d >= 0; d++) {
      path += `${d === 1 ? "" : " > "}${label(chain[top - d]!)}`;
      under.set(path, (under.get(path) ?? 0) + 1);
    }
  }
  console.log(`${callees}: inclusive ${pct(total)}; of it, by callee:`);
  for (const [k, v] of [...under].sort((a, b) => (a[0] < b[0] ? -1 : 1))) if (v * 1000 >= busy) console.log(`${pct(v).padStart(8)}  ${k}`);
}

// LAYERS=1: each busy sample counted once, for the layer of the innermost frame on its stack that is the
// project's (runtime/ by folder, workflow by its subfolder) or the msgpack codec; node's built-ins (Buffer,
// TextEncoder, ...) count for the layer that called them, split out as "built-ins". The collector and
// samples with no such frame on their stack (module loading, the event loop's own work) are their own rows;
// shares are given of all busy samples and of those outside loading, which a longer run makes smaller.
if (process.env.LAYERS === "1") {
  const layerOf = (url: string): string | undefined => {
    if (url.includes("msgpackr")) return "encoding (msgpackr)";
    const m = /(?:^|\/)runtime\/(workflow\/[^/]+|[^/]+)\//.exec(url);
    if (m !== null && m[1] === "workflow") return "workflow (top level)";
    if (m !== null) return m[1]!.startsWith("workflow/") && !/workflow\/(steps|runs|records|memo|signals)$/.test(m[1]!) ? "workflow/(other)" : m[1]!;
    if (/(?:^|\/)runtime\/[^/]+\.ts$/.test(url) || /(?:^|\/)runtime\/[^/]+\.js$/.test(url)) return "runtime (top level)";
    if (/(?:^|\/)bench\//.test(url)) return "bench (runner and driver)";
    return undefined;
  };
  const own = new Map<string, number>();
  const builtins = new Map<string, number>();
  for (const id of profile.samples) {
    const n = byId.get(id)!;
    const fn = n.callFrame.functionName;
    if (fn === "(idle)" || fn === "(program)") continue;
    if (fn === "(garbage collector)") {
      own.set("(garbage collector)", (own.get("(garbage collector)") ?? 0) + 1);
      continue;
    }
    let layer: string | undefined;
    let depth = 0;
    for (let at: number | undefined = id; at !== undefined && layer === undefined; at = parent.get(at), depth++) layer = layerOf(byId.get(at)!.callFrame.url);
    let loading = false;
    if (layer === undefined)
      for (let at: number | undefined = id; at !== undefined && !loading; at = parent.get(at))
        loading = byId.get(at)!.callFrame.url.startsWith("node:internal/modules/");
    const row = layer ?? (loading ? "(loading modules)" : "(no project frame: event loop, timers)");
    own.set(row, (own.get(row) ?? 0) + 1);
    if (layer !== undefined && depth > 1) builtins.set(row, (builtins.get(row) ?? 0) + 1);
  }
  const working = busy - (own.get("(loading modules)") ?? 0);
  const ofWork = (x: number) => `${((100 * x) / working).toFixed(2)} %`;
  console.log("by layer: share of busy samples, of those outside loading, and of the latter in node's built-ins called from it");
  for (const [k, v] of [...own].sort((a, b) => b[1] - a[1])) {
    console.log(`${pct(v).padStart(8)} ${ofWork(v).padStart(8)}  ${k}${builtins.has(k) ? ` (${ofWork(builtins.get(k)!)})` : ""}`);
  }
}
