import { transformSync } from "esbuild"
import { readFileSync } from "node:fs"
const [file, ...cols] = process.argv.slice(2)
const out = transformSync(readFileSync(file, "utf8"), { loader: "ts", format: "esm", minifyWhitespace: true, target: "node20", sourcefile: file }).code
const lines = out.split("\n")
console.log("lines", lines.length)
for (const c of cols) console.log(c, "=>", lines[0].slice(Number(c), Number(c) + 90))
