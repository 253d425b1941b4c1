// Planted by bench/verify_corpus: ms's tests are not published; these use its documented API,
// with failures planted in nested suites and at the top level.
import { describe, expect, it } from "vitest";
import ms from "../index.js";

describe("ms(string)", () => {
  it("parses seconds", () => expect(ms("1s")).toBe(1000));
  it("parses minutes", () => expect(ms("2m")).toBe(120000));
  describe("units (planted)", () => {
    it("parses hours", () => expect(ms("1h")).toBe(3600000));
    it("parses days", () => expect(ms("1d")).toBe(1000));
  });
});

describe("ms(number)", () => {
  it("formats short", () => expect(ms(60000)).toBe("1m"));
  it("formats long", () => expect(ms(60000, { long: true })).toBe("1 minutes"));
});

it("returns undefined for nonsense (planted)", () => expect(ms("nonsense")).toBe(0));
