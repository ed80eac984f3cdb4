import { describe, expect, it } from "@effect/vitest"
import { loadedModules } from "./fixtures/loadedModules.js"

// What only a server, the command line, a SQL ledger or an orchestrator needs: a client that imports the package loads
// none of it.
const serverOnly = [
  /^src\/internal\/server\//,
  /^src\/cli\//,
  /^src\/demo\//,
  /^src\/internal\/ledger\/sql\.ts$/,
  /^node_modules\/(@grpc\/grpc-js|@effect\/sql[^/]*|@effect\/cli|@effect\/ai|better-sqlite3|kysely|express)\//
]

const unneeded = (modules: ReadonlyArray<string>) =>
  modules.filter((file) => serverOnly.some((pattern) => pattern.test(file)))

describe("importing the package", () => {
  it("the client's module loads no server, gRPC, SQL or command-line code", () => {
    const modules = loadedModules("./src/RemoteAgent.ts")
    // The record works: it holds the module imported and the client's own code.
    expect(modules).toContain("src/RemoteAgent.ts")
    expect(modules).toContain("src/internal/client/remoteAgent.ts")
    expect(unneeded(modules)).toEqual([])
  }, 60_000)

  it(
    "the index, which every example imports, loads none of it either: a server's code loads when a server is made",
    () => {
      const modules = loadedModules("./src/index.ts")
      expect(modules).toContain("src/A2AServer.ts")
      expect(modules).toContain("src/IdempotencyLedger.ts")
      expect(unneeded(modules)).toEqual([])
    },
    60_000
  )
})
