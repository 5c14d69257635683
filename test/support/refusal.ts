/**
 * @module The `ValidationError` an action refuses with, whether it throws
 * or rejects: for tests of refused options and values.
 */
import { expect } from "vitest";
import { ValidationError } from "taquba";

/** The refusal `act` throws or rejects with; fails the test when it does neither or throws another error. */
export async function refusal(act: () => unknown): Promise<ValidationError> {
  const err = await (async () => act())().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ValidationError);
  return err as ValidationError;
}
