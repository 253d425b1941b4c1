// Core rules only (the corpus needs no plugin); dist/ is the published build.
export default [
  { ignores: ["dist/**", "lite/**"] },
  {
    files: ["**/*.js", "**/*.mjs"],
    languageOptions: { sourceType: "module" },
    rules: { "no-unused-vars": "error", eqeqeq: "error", "prefer-const": "warn" },
  },
];
