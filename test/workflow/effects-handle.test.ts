/**
 * @module `EffectsHandle` (the KV effects a step stages) and the terminal
 * effects applied with a termination.
 */
import { describe, expect, it } from "vitest";
import { EffectsHandle, EffectsSealedError, InvalidEffectError, ReservedKeyError, TerminalEffects } from "taquba";
import { MAX_KV_VALUE_SIZE } from "../../runtime/queue/names.js";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("EffectsHandle", () => {
  it("stages writes and deletes, a later write of a key replacing the earlier", () => {
    const h = new EffectsHandle();
    h.put("app/a", bytes("1"));
    h.put("app/a", bytes("2"));
    h.delete("app/b");
    h.delete("app/b");
    expect(h.staged()).toEqual({ puts: [["app/a", bytes("2")]], deletes: ["app/b"] });
  });

  it("rejects the reserved prefix, oversize values and a key both written and deleted", () => {
    const h = new EffectsHandle();
    expect(() => h.put("workflow/runs/x", bytes("1"))).toThrow(ReservedKeyError);
    expect(() => h.delete("workflow/x")).toThrow(ReservedKeyError);
    expect(() => h.put("app/big", new Uint8Array(MAX_KV_VALUE_SIZE + 1))).toThrow(InvalidEffectError);
    h.put("app/max", new Uint8Array(MAX_KV_VALUE_SIZE));
    h.put("app/k", bytes("1"));
    expect(() => h.delete("app/k")).toThrow(InvalidEffectError);
    h.delete("app/d");
    expect(() => h.put("app/d", bytes("1"))).toThrow(InvalidEffectError);
    expect(h.staged().puts.map(([k]) => k)).toEqual(["app/max", "app/k"]);
    expect(h.staged().deletes).toEqual(["app/d"]);
  });

  it("is sealed once the step returns", () => {
    const h = new EffectsHandle();
    h.put("app/a", bytes("1"));
    h.seal();
    expect(() => h.put("app/b", bytes("1"))).toThrow(EffectsSealedError);
    expect(() => h.delete("app/a")).toThrow(EffectsSealedError);
    expect(h.staged().puts).toHaveLength(1);
  });

  it("copies staged values so later mutation of the caller's buffer does not leak in", () => {
    const h = new EffectsHandle();
    const v = bytes("abc");
    h.put("app/a", v);
    v[0] = 0;
    expect(h.staged().puts[0]![1]).toEqual(bytes("abc"));
  });
});

describe("TerminalEffects", () => {
  it("converts to settlement effects with KV ops and enqueues", () => {
    const t = new TerminalEffects();
    t.put("app/x", bytes("1"));
    t.delete("app/y");
    t.enqueue("emails", bytes("body"), { priority: 5 });
    const s = t.toSettlementEffects();
    expect(s.kvOps).toEqual([
      { kind: "put", key: "app/x", value: bytes("1") },
      { kind: "delete", key: "app/y" },
    ]);
    expect(s.enqueues).toEqual([{ queueName: "emails", payload: bytes("body"), opts: { priority: 5 } }]);
    expect(() => t.put("workflow/x", bytes("1"))).toThrow(ReservedKeyError);
    t.seal();
    expect(() => t.enqueue("emails", bytes("b"))).toThrow(EffectsSealedError);
  });
});
