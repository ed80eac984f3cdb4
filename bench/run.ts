/**
 * Runs every benchmark under bench/ and prints one table: each figure beside
 * the peer it is compared with, and the ratio.
 *
 *   npm run bench
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Row, table } from "./report.js"

const dir = import.meta.dirname
const benches = readdirSync(dir).filter((f) =>
  f.endsWith(".ts") && !["run.ts", "report.ts", "child.ts", "serverLoad.ts"].includes(f)
).sort()
const work = mkdtempSync(join(tmpdir(), "effect-a2a-bench-"))
const results = join(work, "results.jsonl")
try {
  for (const bench of benches) {
    console.error(`running ${bench} …`)
    execFileSync(process.execPath, ["--import", "tsx", join(dir, bench)], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, BENCH_RESULTS: results }
    })
  }
  const rows = readFileSync(results, "utf8").trim().split("\n").map((line) =>
    JSON.parse(line) as Row & { bench: string }
  )
  console.log(`\n${table(rows)}\n\nnode ${process.version}, ${process.platform}/${process.arch}`)
} finally {
  rmSync(work, { recursive: true, force: true })
}
