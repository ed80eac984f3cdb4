/**
 * Vitest global setup: one PostgreSQL for the whole run (see
 * `fixtures/postgres.ts`), its URL provided to tests as `databaseUrl`.
 */
import type { TestProject } from "vitest/node"
import { startPostgres } from "./fixtures/postgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPostgres()
  project.provide("databaseUrl", postgres.url)
  return () => postgres.stop()
}
