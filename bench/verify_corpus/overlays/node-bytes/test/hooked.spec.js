// Planted by bench/verify_corpus: a suite whose `before all` hook fails, beside one that
// passes in the same file (a rerun runs the hook's suite, not the file's other suites).
var assert = require("assert");
var bytes = require("..");

describe("bytes with a fixture (planted)", function () {
  var fixture;
  before(function () {
    throw new Error("planted: the fixture could not be set up");
  });
  it("uses the fixture", function () { assert.strictEqual(bytes.parse(fixture), 1); });
  it("uses it again", function () { assert.strictEqual(bytes.format(fixture), "1B"); });
});

describe("bytes beside the hook", function () {
  it("passes in the hook's file", function () { assert.strictEqual(bytes.format(1), "1B"); });
});
