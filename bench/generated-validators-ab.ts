/**
 * @module CPU of two checkouts' generated billing validators (generated/
 * billing/validators.ts) on valid inputs: a flat one (email send: two
 * strings) and a nested one (invoice render: two lines of three fields and
 * a price each). Each validator is called `N` times per round; the
 * checkouts alternate round by round, in both orders. With POLLUTE=1 an
 * enumerable field is set on `Object.prototype` while the validators run
 * (as a library's merge of a parsed `{"__proto__": ...}` sets one): the
 * cost of the own-field form, where generated code has two forms.
 *
 *   N=1000000 ROUNDS=6 [POLLUTE=1] npx tsx bench/generated-validators-ab.ts <checkout a> <checkout b>
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadavg } from "node:os";

type Validate = (data: unknown) => boolean;

const dirs = process.argv.slice(2, 4);
if (dirs.length !== 2) throw new Error("name two checkouts");
const N = Number(process.env.N ?? 1_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const POLLUTE = process.env.POLLUTE === "1";

const inputs: Record<string, unknown> = {
  validateEmailSendInput: { to: "a@b.co", subject: "Hi" },
  validateInvoiceRenderInput: {
    invoice_id: "i-1",
    lines: [
      { sku: "s", quantity: 1, unit_price: { amount_cents: 5, currency: "EUR" } },
      { sku: "t", quantity: 2, unit_price: { amount_cents: 7, currency: "EUR" } },
    ],
  },
};

async function load(dir: string): Promise<Record<string, Validate>> {
  const mod = (await import(pathToFileURL(join(resolve(dir), "generated/billing/validators.ts")).href)) as Record<string, unknown>;
  const out: Record<string, Validate> = {};
  for (const name of Object.keys(inputs)) {
    const f = mod[name];
    if (typeof f !== "function") throw new Error(`${dir} has no ${name}`);
    out[name] = f as Validate;
  }
  return out;
}

const checkouts = await Promise.all(dirs.map(load));
const ns: Record<string, number[]> = {};
console.log(
  `N=${N} ROUNDS=${ROUNDS}${POLLUTE ? " POLLUTE=1" : ""} node ${process.version} load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? [0, 1] : [1, 0];
  for (const c of order) {
    for (const [name, input] of Object.entries(inputs)) {
      const f = checkouts[c]![name]!;
      if (POLLUTE) (Object.prototype as Record<string, unknown>).pollutedField = 1;
      const t = process.cpuUsage();
      let ok = 0;
      for (let i = 0; i < N; i++) if (f(input)) ok++;
      const used = process.cpuUsage(t);
      if (POLLUTE) delete (Object.prototype as Record<string, unknown>).pollutedField;
      if (ok !== N) throw new Error(`${dirs[c]}: ${name} refused a valid input`);
      (ns[`${c} ${name}`] ??= []).push(((used.user + used.system) * 1000) / N);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const name of Object.keys(inputs)) {
  const a = ns[`0 ${name}`]!;
  const b = ns[`1 ${name}`]!;
  console.log(
    `${name}: ${dirs[0]} median ${median(a).toFixed(1)} ns (${a.map((x) => x.toFixed(0)).join(", ")}); ${dirs[1]} median ${median(b).toFixed(1)} ns (${b.map((x) => x.toFixed(0)).join(", ")})`,
  );
}
