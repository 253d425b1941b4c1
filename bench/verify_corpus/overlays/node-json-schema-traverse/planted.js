// Planted by sandlot's verify corpus: eslint findings outside the project's own lint scope.
var traverse = require("./index")

function unused(schema) {
  var result = traverse(schema, function () {})
  if (result == null) return
  return result
}
