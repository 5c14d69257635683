/**
 * @module CPU of the workflow value decode (`decodeValue`) with its check
 * that every array owns its elements (`Object.hasOwn` per element, which
 * catches a setter of an index on a prototype taking one) against the
 * same decode without that check, a copy of the previous walk kept here
 * for the comparison. Values with arrays of 4 and of 64 small elements, and
 * a record without arrays. Figures are CPU ns per decode
 * (`process.cpuUsage`, user + system), the median of the rounds after the
 * first two; each round runs both forms, the order reversed every other
 * round.
 *
 * Run: `CALLS=300000 ROUNDS=8 npx tsx bench/decode-array-holes-ab.ts`.
 */
import { Packr } from "msgpackr";
import { assertPlainMessagePack } from "../runtime/engine/plain-messagepack.js";
import { decodeValue, encodeValue } from "../runtime/workflow/records/codec.js";
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 300_000);
const ROUNDS = env("ROUNDS", 8);

const packr = new Packr({ useRecords: false, moreTypes: false });
let seen = 0;

/** The walk before the check: counts fields, copies buffers, no look at array elements' ownership. */
function walkWithoutCheck(v: unknown): unknown {
  if (v instanceof Uint8Array) return v.constructor === Uint8Array ? v : new Uint8Array(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === "object") v[i] = walkWithoutCheck(x);
    }
    return v;
  }
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    seen += keys.length;
    for (const k of keys) {
      const x = o[k];
      if (x !== null && typeof x === "object") o[k] = walkWithoutCheck(x);
    }
  }
  return v;
}

function decodeWithoutCheck(bytes: Uint8Array): unknown {
  const entries = assertPlainMessagePack(bytes);
  seen = 0;
  const v = walkWithoutCheck(packr.unpack(bytes));
  if (seen !== entries) throw new Error("unexpected");
  return v;
}

const values: [string, Uint8Array][] = [
  ["4 elements", encodeValue({ ids: [1, 2, 3, 4], name: "order" })],
  ["64 elements", encodeValue({ ids: Array.from({ length: 64 }, (_, i) => i), name: "order" })],
  ["no array", encodeValue({ a: 1, b: "two", c: { d: true } })],
];

let sink = 0;
for (const [name, bytes] of values) {
  const forms: [string, () => void][] = [
    ["with check", () => void (sink += decodeValue(bytes) === null ? 0 : 1)],
    ["without check", () => void (sink += decodeWithoutCheck(bytes) === null ? 0 : 1)],
  ];
  const labels = forms.map(([f]) => `${name}, ${f}`);
  const figures = await alternateRounds(labels, ROUNDS, (i) => {
    const call = forms[i]![1];
    const start = process.cpuUsage();
    for (let n = 0; n < CALLS; n++) call();
    const used = process.cpuUsage(start);
    return ((used.user + used.system) * 1000) / CALLS;
  });
  printMedians(labels, figures, "ns per decode");
}
if (sink < 0) console.log(sink);
