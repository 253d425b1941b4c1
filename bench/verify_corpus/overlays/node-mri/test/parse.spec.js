// Planted by sandlot's verify corpus: jest specs run under cross-env.
const mri = require("../lib/index.js");

describe("numbers", () => {
  it("casts numeric values", () => {
    expect(mri(["--n", "5"]).n).toBe(5);
  });

  it("keeps the timezone from cross-env", () => {
    expect(process.env.TZ).toBe("Europe/Paris");
  });
});

it("collects positionals", () => {
  expect(mri(["a", "b"])._).toEqual(["a"]);
});
