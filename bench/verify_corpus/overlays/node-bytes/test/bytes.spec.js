// Planted by bench/verify_corpus: bytes's tests are not published; these use its API.
var assert = require("assert");
var bytes = require("..");

describe("bytes.format", function () {
  it("formats kilobytes", function () { assert.strictEqual(bytes.format(1024), "1KB"); });
  it("formats megabytes", function () { assert.strictEqual(bytes.format(1048576), "1MB"); });
  it("rounds (planted)", function () { assert.strictEqual(bytes.format(1536), "1.6KB"); });
});

describe("bytes.parse", function () {
  it("parses kb", function () { assert.strictEqual(bytes.parse("1kb"), 1024); });
  it("parses mb", function () { assert.strictEqual(bytes.parse("1mb"), 1048576); });
});
