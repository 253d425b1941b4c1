// Planted by sandlot's verify corpus: eslint findings.
var mri = require("./lib/index.js");
function flags(argv) {
  var parsed = mri(argv);
  if (parsed._.length == 0) return null;
  return parsed;
}
