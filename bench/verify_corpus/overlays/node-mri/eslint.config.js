// Core rules only (the corpus needs no plugin).
module.exports = [
  {
    files: ["**/*.js"],
    languageOptions: { sourceType: "commonjs", globals: { require: "readonly", module: "writable",
      process: "readonly", describe: "readonly", it: "readonly", expect: "readonly" } },
    rules: { "no-unused-vars": "error", eqeqeq: "error", "no-var": "warn" },
  },
  { ignores: ["lib/index.mjs", "coverage/**"] },
];
