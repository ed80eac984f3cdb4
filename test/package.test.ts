import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { runWithout } from "./fixtures/blocked.js"

const root = path.resolve(import.meta.dirname, "..")

describe("the published package", () => {
  it(
    "packs, installs into a fresh Effect 3 application with what it requires alone, serves, sends, type-checks; a CommonJS one is refused at compile time as at run time",
    async () => {
      // Awaited, not run synchronously: the worker must stay free to answer vitest for these minutes.
      const { stdout: out } = await promisify(execFile)("node", ["scripts/check-pack.mjs"], {
        encoding: "utf8",
        timeout: 400_000
      })
      const result = JSON.parse(out.trim().split("\n").at(-1)!)
      expect(result).toEqual({
        // The tarball's manifest: what a user may leave out, and so what the application first has.
        optional: [
          "@bufbuild/protobuf",
          "@effect/cli",
          "@effect/sql",
          "@effect/sql-pg",
          "@effect/sql-sqlite-node",
          "@grpc/grpc-js",
          "better-sqlite3",
          "kysely",
          "pg"
        ],
        required: ["@a2a-js/sdk", "@effect/platform-node", "jose", "@effect/ai", "@effect/platform", "effect"],
        tarball: "effect-a2a-0.1.0.tgz",
        // A client, with those alone: a call to nowhere is told as such.
        reason: "Unavailable",
        delivery: "NotSent",
        // A memory-store server on 127.0.0.1, and a message sent to it over JSON-RPC.
        served: { host: "127.0.0.1", transport: "JSONRPC", outcome: "Completed", text: "served from the tarball" },
        // Every internal path is closed, whichever room it is in.
        closed: ["ERR_PACKAGE_PATH_NOT_EXPORTED", "ERR_PACKAGE_PATH_NOT_EXPORTED", "ERR_PACKAGE_PATH_NOT_EXPORTED"],
        // An application that skips the libraries' declarations type-checks with the required packages alone;
        // with the optional peers, the declarations check in full.
        typecheck: { lean: "compiled", full: "compiled" },
        // The bin without @effect/cli says what to install, and fails.
        cli: { status: 1, said: "install @effect/cli to use the effect-a2a command (npm install @effect/cli@^0.77.2)" },
        // ESM-only, and said so at compile time: a CommonJS project that requires the package does not type-check,
        // whichever resolution it uses, as the require fails at run time; its `import()` type-checks and runs.
        commonjs: {
          required: { node10: ["TS2307"], node16: ["TS2307"], nodenext: ["TS2307"] },
          imported: "compiled",
          ran: { required: "ERR_PACKAGE_PATH_NOT_EXPORTED", imported: "function" }
        }
      })
    },
    420_000
  )

  it("exports exactly its public modules", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
      readonly exports: Record<string, unknown>
    }
    const modules = fs.readdirSync(path.join(root, "src"))
      .filter((file) => file.endsWith(".ts") && file !== "index.ts" && file !== "bin.ts")
      .map((file) => `./${file.slice(0, -3)}`)
    expect(Object.keys(manifest.exports).sort()).toEqual([".", "./package.json", ...modules].sort())
  })

  it(
    "a client and a memory-store server need no optional peer; each layer that needs some fails naming what to install",
    () => {
      // A preloaded hook makes every load of an optional peer of package.json throw, as if it were not installed.
      const missing = (tag: string, named: string, use: string) => ({
        tag,
        reason: "MissingPackage",
        named,
        use,
        rebuild: false
      })
      const sqlite = "@effect/sql, @effect/sql-sqlite-node and better-sqlite3"
      const storeSqlite = "A2AServer's TaskStoreConfig.Sqlite"
      expect(runWithout("withoutOptionalPeers.ts")).toEqual({
        client: { reason: "Unavailable", told: "REMOTE_UNAVAILABLE" },
        server: { transport: "JSONRPC", outcome: "Completed", text: "served" },
        layers: {
          ledgerSqlite: missing("IdempotencyError", sqlite, "IdempotencyLedger.layerSqlite"),
          ledgerSql: missing("IdempotencyError", "@effect/sql", "IdempotencyLedger.layerSql"),
          ledgerPg: missing("IdempotencyError", "@effect/sql and @effect/sql-pg", "IdempotencyLedger.layerPg"),
          taskStoreSqlite: missing("TaskStoreError", "kysely and better-sqlite3", storeSqlite),
          taskStorePg: missing("TaskStoreError", "kysely and pg", "A2AServer's TaskStoreConfig.Postgres"),
          // The push stores beside a SQLite task store (a server opens the task store first, so they are built alone).
          pushStoreSqlite: missing("Failure", "kysely and better-sqlite3", storeSqlite),
          pushOutboxSqlite: missing("Failure", "kysely and better-sqlite3", storeSqlite),
          replication: missing("TaskStoreError", "kysely and pg", "A2AServer's replication"),
          eventLog: missing("EventLogError", "kysely and pg", "A2AServer's replication")
        }
      })
    },
    60_000
  )

  it(
    "better-sqlite3 without its native addon (its build skipped or failed): the SQLite layers say to rebuild it, not that the file could not be opened",
    () => {
      // Installing again would not help: the message says to rebuild, and names no package to install.
      const rebuild = (tag: string, use: string) => ({
        tag,
        reason: "MissingPackage",
        named: undefined,
        use,
        rebuild: true
      })
      const storeSqlite = "A2AServer's TaskStoreConfig.Sqlite"
      // `bindings` is what better-sqlite3 loads its addon with: refused, the addon is as good as absent.
      expect(runWithout("withoutOptionalPeers.ts", "bindings", ["sqlite"])).toEqual({
        layers: {
          ledgerSqlite: rebuild("IdempotencyError", "IdempotencyLedger.layerSqlite"),
          taskStoreSqlite: rebuild("TaskStoreError", storeSqlite),
          pushStoreSqlite: rebuild("Failure", storeSqlite),
          pushOutboxSqlite: rebuild("Failure", storeSqlite)
        }
      })
    },
    60_000
  )

  it("the mountable routes need no Node platform: served by a web handler with @effect/platform-node refused", () => {
    const result = runWithout("routerWithoutNode.ts", "@effect/platform-node") as {
      card: string
      answer: { result: { task: { status: { state: string; message: { parts: Array<{ text: string }> } } } } }
      nodeServer: string
    }
    expect(result.card).toBe("web")
    expect(result.answer.result.task.status.state).toBe("TASK_STATE_COMPLETED")
    expect(result.answer.result.task.status.message.parts[0]?.text).toBe("served without node")
    // The hook works: starting the Node server, afterwards, is refused its platform.
    expect(result.nodeServer).toBe("refused")
  }, 60_000)
})
