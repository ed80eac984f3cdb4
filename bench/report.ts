/**
 * Shared reporting for benchmarks: each figure beside the peer it is compared
 * with, and the ratio. With `BENCH_RESULTS` set, rows are also appended there
 * as JSON lines, for `bench/run.ts` to gather into one table.
 */
import { Effect, type Scope } from "effect"
import { appendFileSync } from "node:fs"

export interface Row {
  readonly name: string
  readonly ours: number
  readonly peer: number
  readonly unit: string
  readonly target: string
  readonly pass: boolean
}

export const median = (values: ReadonlyArray<number>): number => percentile(values, 50)

export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

const fmt = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3))

const ratio = (r: number) => (r !== 0 && Math.abs(r) < 0.001 ? r.toExponential(1) : r.toFixed(3))

export const table = (rows: ReadonlyArray<Row & { readonly bench?: string }>): string => {
  const lines = [
    "| benchmark | ours | peer | ratio | target |",
    "|---|---:|---:|---:|---|",
    ...rows.map((r) =>
      `| ${r.bench ? `${r.bench}: ` : ""}${r.name} | ${fmt(r.ours)} ${r.unit} | ${fmt(r.peer)} ${r.unit} | ${
        ratio(r.ours / r.peer)
      } | ${r.target} ${r.pass ? "✓" : "✗"} |`
    )
  ]
  return lines.join("\n")
}

export const report = (bench: string, rows: ReadonlyArray<Row>): ReadonlyArray<Row> => {
  console.log(`\n${bench}\n${table(rows)}`)
  const file = process.env.BENCH_RESULTS
  if (file) { for (const row of rows) appendFileSync(file, `${JSON.stringify({ bench, ...row })}\n`) }
  return rows
}

/** Runs a benchmark's program in a scope of its own, then exits: 0 once done, 1 with its error printed. */
export const runMain = (program: Effect.Effect<unknown, unknown, Scope.Scope>): void => {
  Effect.runPromise(Effect.scoped(program)).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}
