const fs = require("fs");
const src = fs.readFileSync("lib.js", "utf8");
if (src.includes("\t")) {
  console.error("lib.js: tab found");
  process.exit(1);
}
console.log("lint: ok");
