// Planted by bench/verify_corpus: a file whose tests all pass (a rerun must not run it).
import { describe, expect, it } from "vitest";
import escapeHtml from "../index.js";

describe("escapeHtml on numbers", () => {
  it("stringifies", () => expect(escapeHtml(5)).toBe("5"));
});
