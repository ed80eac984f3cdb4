// Runs npm scripts at once, and fails when any of them fails: `node scripts/parallel.mjs typecheck lint`.
// `npm test` checks types and lints before vitest, each a single process: one after the other, they leave a core
// of two idle for their whole time. Each one's output is printed whole once it is done, in the order given, so that
// their reports do not interleave.
import { spawn } from "node:child_process"

const run = (script) =>
  new Promise((resolve) => {
    const child = spawn("npm", ["run", "--silent", script], { stdio: ["ignore", "pipe", "pipe"] })
    const output = []
    child.stdout.on("data", (chunk) => output.push(chunk))
    child.stderr.on("data", (chunk) => output.push(chunk))
    child.on("error", (error) => resolve({ script, code: 1, output: [Buffer.from(`${error}\n`)] }))
    // Killed by a signal: no code, and a failure.
    child.on("close", (code) => resolve({ script, code: code ?? 1, output }))
  })

const results = await Promise.all(process.argv.slice(2).map(run))
for (const { code, output, script } of results) {
  process.stdout.write(Buffer.concat(output))
  if (code !== 0) process.stderr.write(`npm run ${script} failed (exit ${code})\n`)
}
process.exitCode = results.find(({ code }) => code !== 0)?.code ?? 0
