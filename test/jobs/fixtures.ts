/**
 * @module Fixtures of the job tests: hand-written job definitions (email
 * send, keyed email, add) with Ajv validators, and a job runner over a
 * mock-clocked memory queue (`openJobEnv`).
 */
import { Ajv } from "ajv";
import {
  createValidator,
  defineHeaders,
  defineJob,
  JobRunner,
  MemoryStore,
  MockClock,
  Queue,
  type JobRunnerBuilder,
  type ObjectStore,
  type RunnerHandle,
} from "taquba";

const ajv = new Ajv({ allErrors: true, strict: false });
const validator = <T>(name: string, schema: object) => createValidator<T>(name, ajv.compile(schema));

export interface EmailInput {
  to: string;
  subject?: string;
}
export interface EmailOutput {
  message_id: string;
}
export interface EmailError {
  reason: "blocked" | "bounced";
}
export type TestHeaders = { tenant_id?: string };

export const testHeaders = defineHeaders<TestHeaders>({
  package: "test",
  names: ["tenant_id"],
  required: [],
  validator: validator<TestHeaders>("test headers", {
    type: "object",
    properties: { tenant_id: { type: "string" } },
    additionalProperties: false,
  }),
});

export const emailJob = defineJob<"test.email.send", EmailInput, EmailOutput, EmailError, TestHeaders>({
  name: "test.email.send",
  package: "test",
  input: validator<EmailInput>("test.email.send input", {
    type: "object",
    properties: { to: { type: "string", pattern: "^[^@]+@[^@]+$" }, subject: { type: "string" } },
    required: ["to"],
    additionalProperties: false,
  }),
  output: validator<EmailOutput>("test.email.send output", {
    type: "object",
    properties: { message_id: { type: "string" } },
    required: ["message_id"],
    additionalProperties: false,
  }),
  error: validator<EmailError>("test.email.send error", {
    type: "object",
    properties: { reason: { enum: ["blocked", "bounced"] } },
    required: ["reason"],
    additionalProperties: false,
  }),
  headers: testHeaders,
  contractHash: "test-email",
});

/** The same job with an idempotency key template over the recipient. */
export const keyedEmailJob = defineJob<"test.email.keyed", EmailInput, EmailOutput, EmailError, TestHeaders>({
  name: "test.email.keyed",
  package: "test",
  input: emailJob.input,
  output: emailJob.output,
  error: emailJob.error!,
  headers: testHeaders,
  idempotencyKey: "mail:{to}",
  contractHash: "test-email-keyed",
});

/** Keyed by a header alone, so a group (one set of options for every member) may submit it. */
export const tenantLimitedJob = defineJob<"test.email.tenant", EmailInput, EmailOutput, EmailError, TestHeaders>({
  name: "test.email.tenant",
  package: "test",
  input: emailJob.input,
  output: emailJob.output,
  error: emailJob.error!,
  headers: testHeaders,
  contractHash: "test-email-tenant",
  flowControl: { concurrency: { limit: 1, key: "{tenant_id}" }, rateLimit: { limit: 50, periodMs: 1000, key: "{tenant_id}" } },
});

export interface AddInput {
  a: number;
  b: number;
}
export const addJob = defineJob<"test.add", AddInput, number, never, TestHeaders>({
  name: "test.add",
  package: "test",
  input: validator<AddInput>("test.add input", {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
    additionalProperties: false,
  }),
  output: validator<number>("test.add output", { type: "number" }),
  headers: testHeaders,
  contractHash: "test-add",
});

export interface JobEnv {
  store: ObjectStore;
  clock: MockClock;
  queue: Queue;
  runner: JobRunner;
  worker: RunnerHandle | undefined;
  logged: unknown[];
  stop(): Promise<void>;
}

/**
 * A queue over `store` (a fresh memory store by default) with a mock clock,
 * no retry backoff and 3 attempts, and a runner over it. The poll interval
 * is an hour and the clock only moves when a test moves it.
 */
export async function openJobEnv(
  configure: (b: JobRunnerBuilder) => JobRunnerBuilder,
  opts: { store?: ObjectStore; start?: boolean; clock?: MockClock } = {},
): Promise<JobEnv> {
  const store = opts.store ?? new MemoryStore();
  const clock = opts.clock ?? new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "q", { flushIntervalMs: 1, clock, queueConfigs: { jobs: { backoff: { baseMs: 0, maxMs: 0 }, maxAttempts: 3 } } });
  const logged: unknown[] = [];
  const runner = configure(
    JobRunner.builder(queue, store)
      .pollIntervalMs(3_600_000)
      .logger({ error: (o) => logged.push(o) }),
  ).build();
  const worker = opts.start === false ? undefined : runner.spawn();
  return {
    store,
    clock,
    queue,
    runner,
    worker,
    logged,
    async stop() {
      await worker?.shutdown();
      await queue.close();
    },
  };
}
