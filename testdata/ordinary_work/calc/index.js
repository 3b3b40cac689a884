const { add } = require("./lib.js");
console.log(`2 + 3 = ${add(2, 3)}`);
