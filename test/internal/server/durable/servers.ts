/**
 * What the durable runs' tests share: SQLite servers of a durable agent
 * that a test stops and starts again on one file, and what it reads of them
 * (the task as a server has it, the durable runs the file still holds).
 */
import type { Task } from "@a2a-js/sdk"
import { Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../../../../src/A2AServer.js"
import type * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as IdempotencyLedger from "../../../../src/IdempotencyLedger.js"
import { makeClient } from "../../../fixtures/serverAgents.js"

/** A SQLite file in a directory of its own, gone with the scope. */
export const databaseFile = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-durable-"))),
  (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
).pipe(Effect.map((directory) => Path.join(directory, "tasks.db")))

/**
 * A server of the durable `agent` on `file`, with the ledger of idempotency
 * keys in a file beside it, that outlives the server too; `close` stops it
 * as a shutdown does (runs in progress left to the next start).
 */
export const serve = (
  file: string,
  agent: AgentExecutor.Agent,
  options: Partial<A2AServer.Options<never, never>> = {}
) =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.map(
      Scope.extend(
        Effect.flatMap(
          Layer.buildWithScope(IdempotencyLedger.layerSqlite({ filename: `${file}.keys` }), scope),
          (ledger) =>
            Effect.provide(
              A2AServer.make({
                agent,
                card: { name: "durable-test", description: "a run that outlives its server" },
                port: 0,
                durable: true,
                shutdownTimeout: "50 millis",
                taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: file }),
                ...options
              }),
              ledger
            )
        ),
        scope
      ),
      (server) => ({ server, close: Scope.close(scope, Exit.void) })
    ))

// better-sqlite3 (the store's own driver) ships no types: what of it this file uses.
const Database = createRequire(import.meta.url)("better-sqlite3") as new(
  file: string,
  options: { readonly readonly: boolean }
) => { prepare: (sql: string) => { all: () => Array<unknown> }; close: () => void }

/** The durable runs `file` still holds, and how many step records: a run's rows go once it ended. */
export const durableRows = (file: string) =>
  Effect.sync(() => {
    const db = new Database(file, { readonly: true })
    try {
      const runs = db.prepare("select task_id, asking from effect_a2a_durable_runs").all() as Array<
        { task_id: string; asking: number | null }
      >
      const [steps] = db.prepare("select count(*) as n from effect_a2a_durable_steps").all() as Array<{ n: number }>
      return { runs, steps: steps?.n ?? 0 }
    } finally {
      db.close()
    }
  })

/** The task `id` as the server at `url` has it. */
export const taskOn = (url: string, id: string): Effect.Effect<Task> =>
  Effect.flatMap(
    makeClient(url),
    (client) => Effect.promise(() => client.getTask({ tenant: "", id, historyLength: undefined }))
  )

/** The texts of the agent's messages in `task`'s history: its progress and its end. */
export const statusTexts = (task: Task) =>
  (task.history ?? []).filter((message) => message.role === 2).map((message) =>
    message.parts.flatMap((part) => part.content?.$case === "text" ? [part.content.value] : []).join("")
  )

export const failedWithId = /^Agent execution failed\. \(error_id: [0-9a-f]+\)$/
