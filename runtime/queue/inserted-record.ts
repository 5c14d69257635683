/**
 * @module The bytes of a job record `insertJobRecord` made, written field
 * by field in the order of its literal: the same bytes the record codec
 * writes (`encodeJob`), without enumerating the record or encoding its
 * field names again. Every enqueue and every chained step inserts one.
 */
import { beginFields, endFields, fieldName, packField, packNumberField, packStringField } from "./record-pack.js";
import { encodeJob, type JobRecord } from "./record.js";

const ID = fieldName("id");
const QUEUE = fieldName("queue");
const STATE = fieldName("state");
const SEQ = fieldName("seq");
const PRIORITY = fieldName("priority");
const PAYLOAD = fieldName("payload");
const PAYLOAD_REF = fieldName("payloadRef");
const PAYLOAD_SIZE = fieldName("payloadSize");
const HEADERS = fieldName("headers");
const ATTEMPTS = fieldName("attempts");
const MAX_ATTEMPTS = fieldName("maxAttempts");
const ENQUEUED_AT = fieldName("enqueuedAt");
const RUN_AT = fieldName("runAt");
const DEDUP_KEY = fieldName("dedupKey");
const DEBOUNCE_KEY = fieldName("debounceKey");
const CLAIMED_AT = fieldName("claimedAt");

/**
 * `encodeJob(r, shared)` for a record whose own keys are exactly those of
 * `insertJobRecord`'s literal, in its order, with `claimedAt` assigned
 * last (test/queue/inserted-record.test.ts holds the two in step). A value
 * the direct writer does not take goes to `encodeJob`, as it would there.
 */
export function encodeInsertedJob(r: JobRecord, shared: boolean): Uint8Array {
  beginFields();
  packStringField(ID, r.id);
  packStringField(QUEUE, r.queue);
  packStringField(STATE, r.state);
  packStringField(SEQ, r.seq);
  packNumberField(PRIORITY, r.priority);
  packField(PAYLOAD, r.payload);
  packStringField(PAYLOAD_REF, r.payloadRef);
  packNumberField(PAYLOAD_SIZE, r.payloadSize);
  packField(HEADERS, r.headers);
  packNumberField(ATTEMPTS, r.attempts);
  packNumberField(MAX_ATTEMPTS, r.maxAttempts);
  packNumberField(ENQUEUED_AT, r.enqueuedAt);
  packNumberField(RUN_AT, r.runAt);
  packStringField(DEDUP_KEY, r.dedupKey);
  packStringField(DEBOUNCE_KEY, r.debounceKey);
  packNumberField(CLAIMED_AT, r.claimedAt);
  return endFields(shared) ?? encodeJob(r, shared);
}
