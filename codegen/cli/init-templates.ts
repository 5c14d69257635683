/**
 * @module The files `taquba init` writes (pure): a commented example spec,
 * handlers, a worker and a submit script over a local directory, and the
 * tsconfig, all as text. The package name of the spec is `app`.
 */

/** One file `init` writes, relative to the project folder. */
export interface InitFile {
  readonly path: string;
  readonly content: string;
}

/** The spec's package name; the generated code lands in `generated/app/`. */
export const INIT_PACKAGE = "app";

const SPEC = `# yaml-language-server: $schema=../node_modules/taquba/schemas/taquba-spec.schema.json
# The jobs, headers, signals and workflows of this application. After an
# edit, run \`npm run codegen\`: it regenerates generated/app/ (typed
# clients, handler interfaces and validators). The format: the README of
# the taquba package, and docs/spec.md in its repository.
version: 1
package: ${INIT_PACKAGE}
description: An example application; edit it to describe yours.

# Headers travel with every job and run; the client checks them at compile time.
headers:
  tenant_id:
    type: string
    pattern: "^[a-z0-9-]{1,64}$"
    description: Who the work is for.

# A signal is a durable message to a run waiting for it, named by a key.
signals:
  approval:
    description: A person approved (or refused) an account.
    key: "approval:{account_id}"
    params:
      account_id: { type: string, minLength: 1 }
    payload:
      type: object
      required: [approved]
      properties:
        approved: { type: boolean }
        by: { type: string }

# A job is one typed async function, retried on failure, run exactly once per idempotency key.
jobs:
  greet:
    description: Builds a greeting.
    idempotency_key: "greet:{name}"
    input:
      type: object
      required: [name]
      properties:
        name: { type: string, minLength: 1, maxLength: 100 }
    output:
      type: object
      required: [message]
      properties:
        message: { type: string }

# A workflow is a sequence of typed steps whose state survives restarts.
workflows:
  account.open:
    description: Opens an account once a person approves it.
    input:
      type: object
      required: [account_id]
      properties:
        account_id: { type: string, minLength: 1 }
    result:
      type: object
      required: [account_id, approved_by]
      properties:
        account_id: { type: string }
        approved_by: { type: string }
    error:
      type: object
      required: [reason]
      properties:
        reason: { type: string, enum: [refused, timed_out] }
    steps:
      # The first step receives the workflow input.
      request:
        description: Asks for an approval.
        next: [decide]
      # Entered when the approval signal arrives, or after timeout_ms without one.
      decide:
        description: Opens the account, or fails the run.
        payload:
          type: object
          required: [account_id]
          properties:
            account_id: { type: string }
        waits_for: approval
        timeout_ms: 86400000
`;

const HANDLERS = `/**
 * The handlers of the jobs and workflows of schemas/${INIT_PACKAGE}.taquba.yaml. Each
 * implements an interface generated from the spec, so a wrong field, step
 * or result is a compile error.
 */
import { ${INIT_PACKAGE} } from "../generated/${INIT_PACKAGE}/index.js";

export class Greet implements ${INIT_PACKAGE}.GreetHandler {
  async run(input: ${INIT_PACKAGE}.GreetInput, ctx: ${INIT_PACKAGE}.GreetContext): Promise<${INIT_PACKAGE}.GreetOutput> {
    const message = \`hello, \${input.name} (tenant \${ctx.headers.tenant_id})\`;
    console.log(\`greet: \${message}\`);
    return { message };
  }
}

export class AccountOpen implements ${INIT_PACKAGE}.AccountOpenHandler {
  async request(input: ${INIT_PACKAGE}.AccountOpenInput, ctx: ${INIT_PACKAGE}.AccountOpenRequestContext): Promise<${INIT_PACKAGE}.AccountOpenRequestTransition> {
    console.log(\`account.open \${ctx.runId}: waiting for the approval of \${input.account_id}\`);
    return ctx.next.decide.onSignal({ account_id: input.account_id }, { account_id: input.account_id });
  }

  async decide(p: ${INIT_PACKAGE}.AccountOpenDecidePayload, ctx: ${INIT_PACKAGE}.AccountOpenDecideContext): Promise<${INIT_PACKAGE}.AccountOpenDecideTransition> {
    if (ctx.signal === null) return ctx.fail({ reason: "timed_out" });
    if (!ctx.signal.approved) return ctx.fail({ reason: "refused" });
    const approvedBy = ctx.signal.by ?? "someone";
    console.log(\`account.open \${ctx.runId}: \${p.account_id} approved by \${approvedBy}\`);
    return ctx.succeed({ account_id: p.account_id, approved_by: approvedBy });
  }
}
`;

const APP = `/**
 * Opens the application's store and queue. One process owns a store at a
 * time: opening it fences the previous owner. Here the store is the local
 * directory .taquba-data/; for S3 use \`openStore("s3://bucket/prefix")\`.
 */
import { JobRunner, LocalStore, Queue } from "taquba";
import { ${INIT_PACKAGE} } from "../generated/${INIT_PACKAGE}/index.js";
import { AccountOpen, Greet } from "./handlers.js";

export async function openApp() {
  const store = new LocalStore(new URL("../.taquba-data/", import.meta.url).pathname);
  const queue = await Queue.open(store, "${INIT_PACKAGE}");
  const builder = ${INIT_PACKAGE}.registerWorkflows(${INIT_PACKAGE}.register(JobRunner.builder(queue, store), { greet: new Greet() }), { accountOpen: new AccountOpen() });
  const runner = builder.build();
  return { runner, client: ${INIT_PACKAGE}.client(runner) };
}
`;

const WORKER = `/**
 * The worker: runs the jobs and workflow steps submitted to the store until
 * Ctrl-C, then drains and closes. Start it with \`npm run worker\`.
 */
import { openApp } from "./app.js";

const { runner } = await openApp();
runner.spawn();
console.log("worker running; press Ctrl-C to stop");
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.log("stopping");
    // Lets in-flight work finish (at most 10 s), then closes the queue.
    void runner.close().then(() => console.log("stopped"));
  });
}
`;

const SUBMIT = `/**
 * Submits a greeting job and opens an account, approving it at once (the
 * approval is kept until the run waits for it), then exits. Run it while
 * no worker runs (\`npm run submit\`, then \`npm run worker\`): one process owns
 * the store at a time.
 */
import { openApp } from "./app.js";

const { runner, client } = await openApp();
const headers = { tenant_id: "demo" };
const job = await client.greet.submit({ name: "Ada" }, { headers });
const run = await client.accountOpen.submit({ account_id: "acc-1" }, { headers, runId: "acc-1" });
await client.signals.approval({ account_id: "acc-1" }, { approved: true, by: "Grace" });
console.log(\`submitted job \${job.jobId} and run \${run.runId}; start the worker with npm run worker\`);
await runner.close();
`;

const TSCONFIG = `{
  "compilerOptions": {
    "target": "es2022",
    "lib": ["es2023"],
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "strict": true,
    "noEmit": true,
    "skipLibCheck": true,
    "types": ["node"]
  },
  "include": ["src", "generated"]
}
`;

/** The files of a new project (package.json aside, which `init` merges). */
export function initFiles(): InitFile[] {
  return [
    { path: `schemas/${INIT_PACKAGE}.taquba.yaml`, content: SPEC },
    { path: "src/handlers.ts", content: HANDLERS },
    { path: "src/app.ts", content: APP },
    { path: "src/worker.ts", content: WORKER },
    { path: "src/submit.ts", content: SUBMIT },
    { path: "tsconfig.json", content: TSCONFIG },
  ];
}

/** The npm scripts `init` adds to package.json (never replacing one of the same name). */
export const INIT_SCRIPTS: Readonly<Record<string, string>> = {
  codegen: "taquba codegen",
  // Runs before \`npm test\` and \`npm run build\`: a spec edited without regenerating fails in one line.
  pretest: "taquba codegen --check",
  prebuild: "taquba codegen --check",
  worker: "tsx src/worker.ts",
  submit: "tsx src/submit.ts",
};
