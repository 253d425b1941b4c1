// Planted by sandlot's verify corpus (dequal publishes no tests): vitest against dist/.
import { describe, expect, it } from "vitest";
import { dequal } from "../dist/index.mjs";

describe("dequal", () => {
  it("compares nested objects", () => {
    expect(dequal({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
  });

  it("tells dates apart", () => {
    expect(dequal(new Date(0), new Date(1))).toBe(true);
  });

  describe("maps", () => {
    it("compares keys and values", () => {
      expect(dequal(new Map([[1, "a"]]), new Map([[1, "b"]]))).toBe(true);
    });
  });
});
