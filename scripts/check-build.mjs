// Builds what is published (dist/) and imports it with plain Node, the way
// an installed package is used: ESM resolution, no TypeScript loader.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";

rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit", cwd: new URL("..", import.meta.url) });
const runtime = await import(new URL("../dist/runtime/index.js", import.meta.url).href);
for (const name of ["MemoryStore", "LocalStore", "S3Store", "Queue", "WorkflowRuntime", "JobRunner", "StepOutcome", "MockClock"]) {
  if (typeof runtime[name] !== "function" && typeof runtime[name] !== "object") throw new Error(`dist/runtime/index.js does not export ${name}`);
}
// A round trip through the built code.
const store = new runtime.MemoryStore();
const queue = await runtime.Queue.open(store, "build-check", { flushIntervalMs: 0 });
await queue.enqueue("q", new Uint8Array([1]));
const job = await queue.claim("q");
await queue.ack(job);
await queue.close();
// Every subpath entry of package.json exists and loads.
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
for (const [entry, target] of Object.entries(pkg.exports)) {
  if (typeof target === "string") continue;
  const mod = await import(new URL(`../${target.import}`, import.meta.url).href);
  if (Object.keys(mod).length === 0) throw new Error(`the entry "${entry}" (${target.import}) exports nothing`);
}
const cli = await import(new URL("../dist/codegen/cli/cli.js", import.meta.url).href);
if (typeof cli.main !== "function") throw new Error("dist/codegen/cli/cli.js has no main");
// The built generator agrees with the committed output.
const code = await cli.main(["codegen", "schemas", "--out", "generated", "--check"]);
if (code !== 0) throw new Error(`the built codegen --check exited with ${code}`);
// The operator CLI loads from dist/ and answers its usage.
const operator = await import(new URL("../dist/operator/cli/main.js", import.meta.url).href);
if (typeof operator.main !== "function") throw new Error("dist/operator/cli/main.js has no main");
const printed = [];
const help = await operator.main(["--help"], { out: (t) => printed.push(t), err: (t) => printed.push(t), color: false });
if (help !== 0 || !printed.join("\n").includes("taquba queue stats")) throw new Error(`the built operator CLI's --help exited with ${help}`);
// The dashboard finds its page files from dist/ (they ship beside it, in operator/dashboard/public/).
const { findAssets } = await import(new URL("../dist/operator/dashboard/assets.js", import.meta.url).href);
if (!(await findAssets()).has("/app.js")) throw new Error("the built dashboard does not find its page files");
console.log(`build: dist/ compiled and imported (${Object.keys(runtime).length} runtime exports)`);
