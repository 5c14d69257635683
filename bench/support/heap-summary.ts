/**
 * @module Heap snapshot summary: the bytes a `.heapsnapshot` holds, grouped by
 * what each object is (its type and constructor or string kind) and, for the
 * largest groups, by what retains them (the retainer's group and the edge's
 * name), so a peak's live heap can be split by owner.
 *
 *   npx tsx bench/support/heap-summary.ts Heap.123.heapsnapshot [groups=25]
 */
import { readFileSync } from "node:fs";

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const file = process.argv[2];
if (file === undefined) throw new Error("usage: heap-summary.ts <file.heapsnapshot> [groups]");
const groups = Number(process.argv[3] ?? 25);
const snap = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
const { meta } = snap.snapshot;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const [nType, nName, nSize, nEdges] = ["type", "name", "self_size", "edge_count"].map((f) => meta.node_fields.indexOf(f)) as [number, number, number, number];
const [eType, eName, eTo] = ["type", "name_or_index", "to_node"].map((f) => meta.edge_fields.indexOf(f)) as [number, number, number];
const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];
const nodes = snap.nodes;
const edges = snap.edges;
const count = nodes.length / NF;

/** A node's group: strings by kind, objects by constructor, arrays and code by type. */
function group(i: number): string {
  const t = nodeTypes[nodes[i * NF + nType]!]!;
  const name = snap.strings[nodes[i * NF + nName]!]!;
  if (t === "string" || t === "concatenated string" || t === "sliced string") return t;
  if (t === "object" || t === "native" || t === "closure" || t === "hidden") return `${t} ${name.slice(0, 60)}`;
  if (t === "array") return `array ${name.slice(0, 40)}`;
  return t;
}

const groupOf: string[] = new Array(count);
const bytes = new Map<string, { size: number; n: number }>();
let total = 0;
for (let i = 0; i < count; i++) {
  const g = group(i);
  groupOf[i] = g;
  const size = nodes[i * NF + nSize]!;
  total += size;
  const e = bytes.get(g) ?? { size: 0, n: 0 };
  e.size += size;
  e.n++;
  bytes.set(g, e);
}
const top = [...bytes.entries()].sort((a, b) => b[1].size - a[1].size).slice(0, groups);
const topSet = new Set(top.map(([g]) => g));

// Retainers: for each node of a top group, every strong edge into it, charged its self size once (to the first such edge).
const charged = new Uint8Array(count);
const by = new Map<string, Map<string, number>>();
let edge = 0;
for (let i = 0; i < count; i++) {
  const from = groupOf[i]!;
  const n = nodes[i * NF + nEdges]!;
  for (let k = 0; k < n; k++, edge += EF) {
    const et = edgeTypes[edges[edge + eType]!]!;
    if (et === "weak" || et === "shortcut") continue;
    const to = edges[edge + eTo]! / NF;
    if (charged[to] === 1 || !topSet.has(groupOf[to]!)) continue;
    charged[to] = 1;
    const edgeName = et === "element" || et === "hidden" ? "" : String(snap.strings[edges[edge + eName]!]);
    const label = edgeName === "" || /^\d+$/.test(edgeName) ? `${from} [${et}]` : `${from} .${edgeName}`;
    const m = by.get(groupOf[to]!) ?? new Map<string, number>();
    m.set(label, (m.get(label) ?? 0) + nodes[to * NF + nSize]!);
    by.set(groupOf[to]!, m);
  }
}
const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
console.log(`${file}: ${mb(total)} MB in ${count.toLocaleString("en-US")} objects`);
for (const [g, e] of top) {
  console.log(`${mb(e.size).padStart(7)} MB ${String(e.n).padStart(9)}  ${g}`);
  const rs = [...(by.get(g) ?? new Map<string, number>()).entries()].sort((a, b) => b[1] - a[1]).slice(0, 6);
  for (const [r, s] of rs) if (s > 64 * 1024) console.log(`            ${mb(s).padStart(6)} MB by ${r}`);
}
