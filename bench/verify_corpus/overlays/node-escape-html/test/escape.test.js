// Planted by bench/verify_corpus: escape-html's tests are not published; these use its API,
// with failures planted in a nested suite and at the top level.
import { describe, expect, it } from "vitest";
import escapeHtml from "../index.js";

describe("escapeHtml", () => {
  it("escapes ampersands", () => expect(escapeHtml("a & b")).toBe("a &amp; b"));
  it("escapes angle brackets", () => expect(escapeHtml("<p>")).toBe("&lt;p&gt;"));
  describe("quotes (planted)", () => {
    it("escapes double quotes", () => expect(escapeHtml('"')).toBe("&quot;"));
    it("escapes single quotes", () => expect(escapeHtml("'")).toBe("&apos;"));
  });
});

it("leaves plain text alone (planted)", () => expect(escapeHtml("plain")).toBe("plain!"));
