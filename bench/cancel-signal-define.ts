/**
 * @module CPU of the ways to give an object a deferred `cancelSignal`
 * (`defineCancelSignal`), each on a fresh object shaped like a claimed
 * job that is then frozen, as the step path does it, alternating the
 * order round by round in one process: the two `Object.defineProperty`
 * calls as made (accessor, then the hidden source slot with a fresh
 * descriptor), the slot's descriptor shared and refilled, both in one
 * `Object.defineProperties`, the slot first, and each call alone (what
 * each costs). Reported: the median ns per object of the rounds after the
 * first two, with the load.
 *
 * Run: `CALLS=2000000 ROUNDS=8 npx tsx bench/cancel-signal-define.ts`.
 */
import { median } from "./support/percentile.js";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 2_000_000);
const ROUNDS = env("ROUNDS", 8);

const SOURCE: unique symbol = Symbol("source");
type Sourced = { readonly [SOURCE]: { readonly signal: number } };
const ACCESSOR: PropertyDescriptor = {
  get(this: Sourced): number {
    return this[SOURCE].signal;
  },
  enumerable: true,
};
// A private field added to any object: a base class whose constructor returns the object it is given.
class ReturnsGiven {
  constructor(o: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the trick that lets a private field stamp an object made elsewhere
    return o;
  }
}
class SourceStamp extends ReturnsGiven {
  #source: object;
  constructor(o: object, s: object) {
    super(o);
    this.#source = s;
  }
  static sourceOf(o: object): object | undefined {
    return #source in o ? o.#source : undefined;
  }
}
const sharedSlot: PropertyDescriptor = { value: undefined };
const both: PropertyDescriptorMap = { cancelSignal: ACCESSOR, [SOURCE]: { value: undefined } };

const ways: Record<string, (target: object, source: object) => void> = {
  "as made": (t, s) => {
    Object.defineProperty(t, "cancelSignal", ACCESSOR);
    Object.defineProperty(t, SOURCE, { value: s });
  },
  "slot descriptor shared": (t, s) => {
    Object.defineProperty(t, "cancelSignal", ACCESSOR);
    sharedSlot.value = s;
    Object.defineProperty(t, SOURCE, sharedSlot);
    sharedSlot.value = undefined;
  },
  "one defineProperties": (t, s) => {
    both[SOURCE]!.value = s;
    Object.defineProperties(t, both);
    both[SOURCE]!.value = undefined;
  },
  "slot first": (t, s) => {
    Object.defineProperty(t, SOURCE, { value: s });
    Object.defineProperty(t, "cancelSignal", ACCESSOR);
  },
  "accessor, slot a private field": (t, s) => {
    Object.defineProperty(t, "cancelSignal", ACCESSOR);
    new SourceStamp(t, s);
  },
  "private field alone": (t, s) => {
    new SourceStamp(t, s);
  },
  "accessor alone": (t) => {
    Object.defineProperty(t, "cancelSignal", ACCESSOR);
  },
  "slot alone": (t, s) => {
    Object.defineProperty(t, SOURCE, { value: s });
  },
  neither: () => {},
};

let sink = 0;
function measure(define: (target: object, source: object) => void): number {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const job: Record<string, unknown> = { id: "01JEQ000000000000000000000", queueName: "steps", payload: null, attempt: i };
    define(job, { signal: i });
    job.isLastAttempt = null;
    Object.freeze(job);
    sink += job.attempt as number;
  }
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / CALLS;
}

const names = Object.keys(ways);
const rounds = new Map<string, number[]>(names.map((n) => [n, []]));
console.log(`deferred cancelSignal: CPU ns per object; CALLS=${CALLS} ROUNDS=${ROUNDS}`);
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const n of order) rounds.get(n)!.push(measure(ways[n]!));
  console.log(`round ${r + 1} done (load ${loadAverageText()})`);
}
for (const n of names) console.log(`${n}: median after 2 rounds ${median(rounds.get(n)!.slice(2)).toFixed(0)} ns per object`);
if (sink === 0) console.log("");
if (SourceStamp.sourceOf({}) !== undefined) console.log("");
