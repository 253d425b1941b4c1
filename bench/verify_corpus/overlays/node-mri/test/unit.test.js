// Planted by sandlot's verify corpus (mri publishes no tests): node:test under c8.
const test = require("node:test");
const assert = require("node:assert");
const mri = require("../lib/index.js");

test("parses a flag", () => {
  assert.deepStrictEqual(mri(["--foo"]), { _: [], foo: true });
});

test.describe("aliases", () => {
  test.it("copies values to aliases", () => {
    assert.deepStrictEqual(mri(["-f", "x"], { alias: { f: "file" } }).file, "y");
  });
});
