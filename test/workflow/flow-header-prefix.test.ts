import { describe, expect, it } from "vitest";
import { FLOW_HEADER_NAMES, FLOW_HEADER_PREFIX } from "../../runtime/workflow/runs/submit.js";
import { RESERVED_HEADER_PREFIX } from "../../runtime/workflow/records/reserved.js";

// The next step's headers skip the flow headers' lookups when no header name starts with the prefix:
// a flow header outside it would be dropped from every step after the first.
describe("the flow headers' prefix", () => {
  it("starts every flow header's name, and lies inside the reserved prefix", () => {
    for (const name of FLOW_HEADER_NAMES) expect(name.startsWith(FLOW_HEADER_PREFIX), name).toBe(true);
    expect(FLOW_HEADER_PREFIX.startsWith(RESERVED_HEADER_PREFIX)).toBe(true);
  });
});
