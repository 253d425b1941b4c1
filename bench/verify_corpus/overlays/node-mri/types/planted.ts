// Planted by sandlot's verify corpus: type errors against mri's published typings.
import mri = require("../index");

const argv = mri(["--port", "80"], { boolean: 1 });
const port: number = argv._;
export { port };
