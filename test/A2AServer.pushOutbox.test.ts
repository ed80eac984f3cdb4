/**
 * The push outbox on SQLite: a delivery pending when the server stops is
 * sent by the next server on the same file, once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as internalPushOutbox from "../src/internal/server/pushOutbox.js"
import { callerOn, keyOf, serve, taskOf } from "./fixtures/callers.js"
import { eventually } from "./fixtures/serverAgents.js"
import { type Received, webhook } from "./fixtures/webhook.js"

const sqliteFile = (): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-outbox-")), "tasks.db")),
    (file) => Effect.sync(() => Fs.rmSync(Path.dirname(file), { recursive: true, force: true }))
  )

/** The rows of the outbox, read straight from the file. */
const outboxRows = (file: string): Effect.Effect<ReadonlyArray<{ readonly task_id: string; readonly headers: string }>> =>
  Effect.sync(() => {
    const Database = createRequire(import.meta.url)("better-sqlite3")
    const db = new Database(file, { readonly: true })
    try {
      return db.prepare(`select task_id, headers from ${internalPushOutbox.table} order by id`).all()
    } finally {
      db.close()
    }
  })

const stateOf = (received: Received): string | undefined => {
  const body = JSON.parse(received.body)
  return body.statusUpdate?.status?.state ?? body.task?.status?.state
}

describe("A2AServer's push outbox on SQLite", () => {
  it.scopedLive("a FAILED delivery pending when the server stops is sent once, with its token, by the next server on the file", () =>
    Effect.gen(function*() {
      const file = yield* sqliteFile()
      let up = false
      // What each request was answered, by its index: only the ones answered 2xx count as delivered.
      const answered: Array<number> = []
      const hook = yield* webhook((index, _, response) => {
        answered[index] = up ? 200 : 503
        response.writeHead(answered[index]!).end()
      })
      const options = {
        taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: file }),
        push: { allowPushTargets: ["127.0.0.1"] }
      }
      const token = `tok-${crypto.randomUUID()}`
      const config = { tenant: "", id: "", taskId: "", url: hook.url, token, authentication: undefined }

      const first = yield* Scope.make()
      const { server } = yield* Scope.extend(serve(options), first)
      const a = yield* callerOn(server.url, "JSONRPC", keyOf("a"))
      const task = taskOf(yield* a.sendWith("fail", { taskPushNotificationConfig: config }))
      // The webhook is down: the first delivery is refused and retried while the FAILED one waits behind it.
      yield* eventually(Effect.sync(() => hook.received.length), (n) => n >= 2, 500)
      yield* Scope.close(first, Exit.void)

      const pending = yield* outboxRows(file)
      expect(pending.length).toBeGreaterThan(0)
      expect(pending.every((row) => row.task_id === task.id)).toBe(true)
      // The token is kept with the row: it is what the webhook checks after the restart.
      expect(pending.every((row) => JSON.parse(row.headers)["X-A2A-Notification-Token"] === token)).toBe(true)
      const beforeRestart = hook.received.length
      expect(answered.every((status) => status === 503)).toBe(true)

      up = true
      const second = yield* Scope.make()
      yield* Scope.extend(serve(options), second)
      const delivered = () => hook.received.filter((received) => answered[received.index] === 200)
      const final = yield* eventually(
        Effect.sync(() => delivered().filter((received) => stateOf(received) === "TASK_STATE_FAILED")),
        (found) => found.length > 0,
        1500
      )
      expect(hook.received.length).toBeGreaterThan(beforeRestart)
      expect(final[0]!.headers["x-a2a-notification-token"]).toBe(token)
      expect(final[0]!.body).toContain(task.id)
      expect(final[0]!.body).toMatch(/Agent execution failed\. \(error_id: [0-9a-f]{12}\)/)
      expect(final[0]!.body).not.toContain("hunter2")
      // Every row sent and deleted; nothing sent twice, the FAILED one last.
      yield* eventually(outboxRows(file), (rows) => rows.length === 0, 500)
      yield* Effect.sleep("300 millis")
      const bodies = delivered().map((received) => received.body)
      expect(new Set(bodies).size).toBe(bodies.length)
      expect(bodies.length).toBe(pending.length)
      expect(stateOf(delivered().at(-1)!)).toBe("TASK_STATE_FAILED")
      yield* Scope.close(second, Exit.void)
    }), 30_000)
})
