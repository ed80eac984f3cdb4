/**
 * Vitest global setup: one PostgreSQL for the whole run (see
 * `fixtures/postgres.ts`), its URL provided to tests as `databaseUrl`.
 * When it cannot start, the reason is provided as `databaseError` instead, so
 * exactly the tests that need PostgreSQL fail, with that reason.
 */
import type { TestProject } from "vitest/node"
import { startPostgres } from "./fixtures/postgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string | undefined
    databaseError: string | undefined
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
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
