import { describe, expect, it } from "vitest";
import { argumentsDigest, canonicalJson } from "../../src/execution/arguments-digest";

describe("argumentsDigest", () => {
  it("is independent of key order and sensitive to any value", async () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
    const a = await argumentsDigest({ title: "x", panels: ["p"] });
    expect(a).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await argumentsDigest({ panels: ["p"], title: "x" })).toBe(a);
    expect(await argumentsDigest({ panels: ["p"], title: "y" })).not.toBe(a);
  });
});
