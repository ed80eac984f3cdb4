/**
 * The order test files start in: the longest first, so that no long file
 * starts last and runs alone while the other workers idle. Vitest orders by
 * the durations of the last run when it has them, and by file size without
 * (a fresh clone, as in CI); size says little here (package.test.ts is small
 * and among the longest), so the files measured longest come first.
 * A stale list costs time, not correctness.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node"

// Measured with `vitest run --reporter=json`, longest first; package.test.ts (TypeScript compiles) a little later,
// so that it does not start with the other files that load the library in child processes (CPU, at once).
const longest = [
  "test/A2AServer.durable.test.ts",
  "test/Cli.test.ts",
  "test/A2AServer.durable.postgres.test.ts",
  "test/A2AServer.replicas.postgres.test.ts",
  "test/internal/server/replication/eventLog.test.ts",
  "test/RemoteAgent.resume.test.ts",
  "test/package.test.ts",
  "test/A2AServer.replication.test.ts",
  "test/A2AServer.idempotency.test.ts",
  "test/A2AServer.platform.test.ts",
  "test/IdempotencyLedger.test.ts",
  "test/docs.test.ts",
  "test/AgentExecutor.test.ts"
]

// Last, when fewer files run beside them: their assertions race the server's own timers (a reader dropped after
// 2 s stalled), and failed when a busy machine was slower than that.
const last = ["test/A2AServer.badInput.test.ts"]

export default class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const named = (names: ReadonlyArray<string>, file: TestSpecification) =>
      names.findIndex((name) => file.moduleId.endsWith(`/${name}`))
    const rank = (file: TestSpecification) => {
      if (named(last, file) !== -1) return longest.length + 1
      const i = named(longest, file)
      return i === -1 ? longest.length : i
    }
    // Stable: the others keep Vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b))
  }
}
