// Planted by bench/verify_corpus: a file whose tests all pass (a rerun must not run it).
import { describe, expect, it } from "vitest";
import ms from "../index.js";

describe("ms round trips", () => {
  it("keeps a second", () => expect(ms(ms("1s"))).toBe("1s"));
  it("keeps an hour", () => expect(ms(ms("1h"))).toBe("1h"));
});
