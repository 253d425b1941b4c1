// Planted by sandlot's verify corpus: eslint findings.
let unusedCount = 0;
export function same(a, b) {
  let result = a == b;
  return result;
}
