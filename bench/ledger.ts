/**
 * Idempotency ledger benchmark: first-run and replay throughput of the
 * in-memory, SQLite and PostgreSQL ledgers (interleaved rounds, ratios
 * against the in-memory ledger), and contention: 100 concurrent `once` calls
 * with one key, which must run the effect exactly once, with p50/p99 latency.
 *
 * PostgreSQL: `DATABASE_URL`, or a throwaway embedded server.
 *
 *   npx tsx bench/ledger.ts
 */
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import { startPostgres } from "../test/fixtures/postgres.js"
import { report } from "./report.js"

const ROUNDS = 5
const BATCH = 400
const CONTENDERS = 100
const CONTENTION_ROUNDS = 5

const identity: IdempotencyLedger.Identity = { tenant: "bench", user: "bench" }
const success = Schema.Struct({ reservation: Schema.String, amount: Schema.Number })

interface Measured {
  firstRun: number
  replay: number
  requestFirst: number
  requestReplay: number
}

const timed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const start = performance.now()
    yield* effect
    return performance.now() - start
  })

/** One batch of each operation on one ledger, returning milliseconds spent per kind. */
const batch = (ledger: IdempotencyLedger.Service, round: number) =>
  Effect.gen(function*() {
    const keys = Array.from({ length: BATCH }, (_, i) => `r${round}-k${i}`)
    const effect = Effect.succeed({ reservation: "12A", amount: 42 })
    const firstRun = yield* timed(
      Effect.forEach(keys, (key) => ledger.once(key, effect, { success }), { discard: true })
    )
    const replay = yield* timed(Effect.forEach(keys, (key) => ledger.once(key, effect, { success }), { discard: true }))
    const requestFirst = yield* timed(
      Effect.forEach(
        keys,
        (key) =>
          Effect.zipRight(
            ledger.begin({ key, identity, fingerprint: "fp", taskId: `task-${key}` }),
            ledger.finish({ key, identity, result: { id: `task-${key}`, status: { state: 3 } } })
          ),
        { discard: true }
      )
    )
    const requestReplay = yield* timed(
      Effect.forEach(keys, (key) => ledger.begin({ key, identity, fingerprint: "fp", taskId: "unused" }), {
        discard: true
      })
    )
    return { firstRun, replay, requestFirst, requestReplay }
  })

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

/** 100 concurrent `once` calls with one key; returns each call's latency and how often the effect ran. */
const contention = (ledger: IdempotencyLedger.Service, round: number) =>
  Effect.gen(function*() {
    let runs = 0
    const effect = Effect.sync(() => ++runs).pipe(Effect.delay("20 millis"))
    const latencies = yield* Effect.all(
      Array.from({ length: CONTENDERS }, () =>
        Effect.gen(function*() {
          const start = performance.now()
          yield* ledger.once(`contended-${round}`, effect, { success: Schema.Number })
          return performance.now() - start
        })),
      { concurrency: "unbounded" }
    )
    return { latencies, runs }
  })

const main = Effect.gen(function*() {
  const postgres = yield* Effect.acquireRelease(
    Effect.promise(() => startPostgres()),
    (pg) => Effect.promise(() => pg.stop())
  )
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-bench-"))),
    (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
  )
  const table = `bench_${Date.now()}`
  const layers = {
    memory: IdempotencyLedger.layerMemory({ pollInterval: "10 millis" }),
    sqlite: IdempotencyLedger.layerSqlite({ filename: path.join(dir, "ledger.db"), pollInterval: "10 millis" }),
    pg: IdempotencyLedger.layerPg({ url: postgres.url, table, pollInterval: "10 millis" })
  }
  const names = ["memory", "sqlite", "pg"] as const
  const ledgers = {} as Record<(typeof names)[number], IdempotencyLedger.Service>
  for (const name of names) {
    ledgers[name] = Context.get(yield* Layer.build(layers[name]), IdempotencyLedger.IdempotencyLedger)
  }

  console.log(
    `PostgreSQL: ${
      postgres.embedded ? "embedded (throwaway)" : "DATABASE_URL"
    }; ${ROUNDS} interleaved rounds of ${BATCH} keys, sequential calls`
  )
  // Warm-up: prepares statements and fills connection pools.
  for (const name of names) yield* batch(ledgers[name], -1)

  const totals = Object.fromEntries(
    names.map((name) => [name, { firstRun: 0, replay: 0, requestFirst: 0, requestReplay: 0 } as Measured])
  ) as Record<(typeof names)[number], Measured>
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of names) {
      const m = yield* batch(ledgers[name], round)
      const t = totals[name]
      t.firstRun += m.firstRun
      t.replay += m.replay
      t.requestFirst += m.requestFirst
      t.requestReplay += m.requestReplay
    }
  }

  const ops = ROUNDS * BATCH
  const rate = (ms: number) => (ops / ms) * 1000
  const rows = names.map((name) => {
    const t = totals[name]
    const base = totals.memory
    return {
      ledger: name,
      "once first-run ops/s": Math.round(rate(t.firstRun)),
      "once replay ops/s": Math.round(rate(t.replay)),
      "begin+finish ops/s": Math.round(rate(t.requestFirst)),
      "begin replay ops/s": Math.round(rate(t.requestReplay)),
      "first-run vs memory": `${(base.firstRun / t.firstRun).toFixed(3)}x`,
      "replay vs memory": `${(base.replay / t.replay).toFixed(3)}x`
    }
  })
  console.table(rows)

  console.log(
    `Contention: ${CONTENDERS} concurrent once() calls with one key (effect takes 20 ms), ${CONTENTION_ROUNDS} rounds`
  )
  const contentionRows = []
  for (const name of names) {
    const latencies: Array<number> = []
    const runs: Array<number> = []
    for (let round = 0; round < CONTENTION_ROUNDS; round++) {
      const result = yield* contention(ledgers[name], round)
      for (const latency of result.latencies) latencies.push(latency)
      runs.push(result.runs)
    }
    latencies.sort((a, b) => a - b)
    contentionRows.push({
      ledger: name,
      "effect runs per key": runs.join(","),
      "exactly once": runs.every((n) => n === 1),
      "p50 ms": percentile(latencies, 50).toFixed(1),
      "p99 ms": percentile(latencies, 99).toFixed(1)
    })
  }
  console.table(contentionRows)
  report("ledger", [
    ...(["sqlite", "pg"] as const).flatMap((name) => [
      {
        name: `${name} vs memory: once first run, ms per op`,
        ours: totals[name].firstRun / ops,
        peer: totals.memory.firstRun / ops,
        unit: "ms",
        target: "informative",
        pass: true
      },
      {
        name: `${name} vs memory: once replay, ms per op`,
        ours: totals[name].replay / ops,
        peer: totals.memory.replay / ops,
        unit: "ms",
        target: "informative",
        pass: true
      }
    ]),
    ...contentionRows.map((row) => ({
      name: `${row.ledger}: 100 concurrent once() on one key, p99 vs p50 latency (ran ${
        row["exactly once"] ? "exactly once" : "MORE THAN ONCE"
      })`,
      ours: Number(row["p99 ms"]),
      peer: Number(row["p50 ms"]),
      unit: "ms",
      target: "exactly once",
      pass: row["exactly once"]
    }))
  ])
  if (contentionRows.some((row) => !row["exactly once"])) {
    return yield* Effect.dieMessage("an effect ran more than once under contention")
  }
})

Effect.runPromise(Effect.scoped(main)).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
