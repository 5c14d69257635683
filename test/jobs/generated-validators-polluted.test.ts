/**
 * @module Generated validators judge a value's own fields: a field a
 * library set on `Object.prototype` (as merging a parsed
 * `{"__proto__": ...}` does) is neither an undeclared field of every input
 * nor a required field the input lacks.
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "taquba";
import { billing } from "../../generated/index.js";
import { withPolluted } from "../support/polluted-prototype.js";

const emailInput = billing.emailSendJob.input;

describe("generated validators under a polluted Object.prototype", () => {
  it.each([{ "-1": "x" }, { extra: 1 }, { 0: { a: 1 } }])("accept a valid input while Object.prototype holds %o", (fields) => {
    expect(withPolluted(fields, () => emailInput.is({ to: "a@b.co", subject: "Hi" }))).toBe(true);
    expect(withPolluted(fields, () => emailInput.validate({ to: "a@b.co", subject: "Hi" }))).toEqual([]);
  });

  it("refuse an input whose required field only the prototype holds", () => {
    const errors = withPolluted({ subject: "from the prototype" }, () => emailInput.validate({ to: "a@b.co" }));
    expect(errors).toEqual([expect.objectContaining({ path: "/subject" })]);
    expect(() => withPolluted({ subject: "from the prototype" }, () => emailInput.assert({ to: "a@b.co" }))).toThrow(ValidationError);
  });

  it("still refuse an undeclared own field", () => {
    expect(withPolluted({ "-1": "x" }, () => emailInput.is({ to: "a@b.co", subject: "Hi", bcc: "c@d.co" }))).toBe(false);
  });
});
