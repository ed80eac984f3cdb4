/**
 * The push outbox on SQLite: a delivery pending when the server stops is
 * sent by the next server on the same file, once.
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Metric, Scope } from "effect"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as internalMetrics from "../src/internal/observability/metrics.js"
import * as internalPushOutbox from "../src/internal/server/push/pushOutbox.js"
import * as Part from "../src/Part.js"
import { callerOn, keyOf, serve, taskOf } from "./fixtures/callers.js"
import { captureLogs, eventually } from "./fixtures/serverAgents.js"
import { type Received, switchable, webhook } from "./fixtures/webhook.js"

const sqliteFile = (): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-outbox-")), "tasks.db")),
    (file) => Effect.sync(() => Fs.rmSync(Path.dirname(file), { recursive: true, force: true }))
  )

/** The rows of the outbox, read straight from the file. */
const outboxRows = (
  file: string
): Effect.Effect<
  ReadonlyArray<
    { readonly task_id: string; readonly headers: string; readonly attempts: number; readonly body: string }
  >
> =>
  Effect.sync(() => {
    const Database = createRequire(import.meta.url)("better-sqlite3")
    const db = new Database(file, { readonly: true })
    try {
      return db.prepare(`select task_id, headers, attempts, body from ${internalPushOutbox.table} order by id`).all()
    } finally {
      db.close()
    }
  })

const stateOf = (received: Received): string | undefined => {
  const body = JSON.parse(received.body)
  return body.statusUpdate?.status?.state ?? body.task?.status?.state
}

/** A SQLite file, a webhook that is down until brought up, and the options of a server pushing to it. */
const setUp = Effect.gen(function*() {
  const file = yield* sqliteFile()
  const hook = yield* switchable
  const options = {
    taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: file }),
    push: { allowPushTargets: ["127.0.0.1"] }
  }
  return { file, hook, options }
})

/** A first server with `options`, where caller `a` sends `text` with a webhook config; closed with `scope`. */
const sendOnFirst = (
  options: Effect.Effect.Success<typeof setUp>["options"],
  text: string,
  config: { readonly url: string; readonly token: string; readonly id?: string }
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const { server } = yield* Scope.extend(serve(options), scope)
    const a = yield* callerOn(server.url, "JSONRPC", keyOf("a"))
    const task = taskOf(
      yield* a.sendWith(text, {
        taskPushNotificationConfig: { tenant: "", id: "", taskId: "", authentication: undefined, ...config }
      })
    )
    return { a, task, scope }
  })

describe("A2AServer's push outbox on SQLite", () => {
  it.scopedLive(
    "a FAILED delivery pending when the server stops is sent once, with its token, by the next server on the file",
    () =>
      Effect.gen(function*() {
        const { file, hook, options } = yield* setUp
        const token = `tok-${crypto.randomUUID()}`
        const { scope: first, task } = yield* sendOnFirst(options, "fail", { url: hook.url, token })
        // The webhook is down: the first delivery is refused and retried while the FAILED one waits behind it.
        yield* eventually(Effect.sync(() => hook.received.length), (n) => n >= 2, 500)
        yield* Scope.close(first, Exit.void)

        const pending = yield* outboxRows(file)
        expect(pending.length).toBeGreaterThan(0)
        expect(pending.every((row) => row.task_id === task.id)).toBe(true)
        // The token is kept with the row: it is what the webhook checks after the restart.
        expect(pending.every((row) => JSON.parse(row.headers)["X-A2A-Notification-Token"] === token)).toBe(true)
        // The failed attempts are recorded: the next server goes on from them.
        expect(pending[0]!.attempts).toBeGreaterThanOrEqual(1)
        const beforeRestart = hook.received.length
        expect(hook.delivered()).toHaveLength(0)

        hook.setUp(true)
        const second = yield* Scope.make()
        yield* Scope.extend(serve(options), second)
        const delivered = hook.delivered
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
      }),
    30_000
  )

  it.scopedLive(
    "a pending delivery whose config its caller deleted before the restart is dropped, not sent",
    () =>
      Effect.gen(function*() {
        const { file, hook, options } = yield* setUp
        const { a, scope: first, task } = yield* sendOnFirst(options, "fail", {
          url: hook.url,
          token: "tok",
          id: "gone"
        })
        yield* eventually(Effect.sync(() => hook.received.length), (n) => n >= 1, 500)
        yield* Effect.promise(() =>
          a.client.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "gone" }, a.options)
        )
        yield* Scope.close(first, Exit.void)
        expect((yield* outboxRows(file)).length).toBeGreaterThan(0)

        hook.setUp(true)
        const second = yield* Scope.make()
        yield* Scope.extend(serve(options), second)
        yield* eventually(outboxRows(file), (rows) => rows.length === 0, 1500)
        expect(hook.delivered()).toHaveLength(0)
        yield* Scope.close(second, Exit.void)
      }),
    30_000
  )

  it.scopedLive(
    "after a restart, a task's new events wait for the ones the last server left: the webhook gets them all in order",
    () =>
      Effect.gen(function*() {
        const { file, hook, options } = yield* setUp
        const { scope: first, task } = yield* sendOnFirst(options, "ask", { url: hook.url, token: "tok" })
        yield* eventually(Effect.sync(() => hook.received.length), (n) => n >= 2, 500)
        yield* Scope.close(first, Exit.void)
        const left = (yield* outboxRows(file)).map((row) => row.body)
        expect(left.length).toBeGreaterThan(0)

        // The webhook still down, the task goes on on the next server: its new events must not overtake.
        const second = yield* Scope.make()
        const { server: next } = yield* Scope.extend(serve(options), second)
        const answered = yield* (yield* callerOn(next.url, "JSONRPC", keyOf("a"))).send("hello", task.id)
        expect(taskOf(answered).status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        yield* Effect.sleep("1 second")
        hook.setUp(true)
        yield* eventually(
          Effect.sync(() => hook.delivered().some((received) => stateOf(received) === "TASK_STATE_COMPLETED")),
          (done) => done,
          1500
        )
        yield* eventually(outboxRows(file), (rows) => rows.length === 0, 500)
        const bodies = hook.delivered().map((received) => received.body)
        expect(bodies.slice(0, left.length)).toEqual(left)
        expect(bodies.length).toBeGreaterThan(left.length)
        expect(stateOf(hook.delivered().at(-1)!)).toBe("TASK_STATE_COMPLETED")
        yield* Scope.close(second, Exit.void)
      }),
    40_000
  )

  it.scopedLive(
    "an agent emitting many artifacts and statuses behind a webhook that holds every request: at most maxPending wait, the dropped rows deleted and counted failed, the final delivered last",
    () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        const file = yield* sqliteFile()
        const held: Array<() => void> = []
        let released = false
        const hook = yield* webhook((_, __, response) => {
          const answer = () => void response.writeHead(200).end()
          if (released) answer()
          else held.push(answer)
        })
        const chatty: AgentExecutor.Agent<Error> = () =>
          Effect.gen(function*() {
            for (let i = 0; i < 30; i++) {
              yield* AgentExecutor.artifact(
                Part.Artifact.make({
                  artifactId: `a-${i}`,
                  name: `${i}`,
                  description: "",
                  parts: [Part.TextPart.make({ text: `${i}` })]
                })
              )
              yield* AgentExecutor.status(`step ${i}`)
            }
            return AgentExecutor.completedText("done")
          })
        const { server } = yield* serve({
          agent: chatty,
          taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: file }),
          push: { allowPushTargets: ["127.0.0.1"], maxPending: 3 }
        })
        const a = yield* callerOn(server.url, "JSONRPC", keyOf("a"))
        const task = taskOf(
          yield* a.sendWith("go", {
            taskPushNotificationConfig: {
              tenant: "",
              id: "",
              taskId: "",
              authentication: undefined,
              url: hook.url,
              token: "tok"
            }
          })
        )
        expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        // The first delivery is held; what waits behind it is bounded, in the lane and in the outbox.
        yield* eventually(Effect.sync(() => hook.received.length), (n) => n === 1, 200)
        yield* eventually(outboxRows(file), (rows) => rows.length <= 1 + 3, 200)
        released = true
        for (const answer of held.splice(0)) answer()
        yield* eventually(
          Effect.sync(() => hook.received.some((received) => stateOf(received) === "TASK_STATE_COMPLETED")),
          (done) => done,
          300
        )
        yield* eventually(outboxRows(file), (rows) => rows.length === 0, 300)
        const bodies = hook.received.map((received) => JSON.parse(received.body))
        expect(bodies.length).toBeLessThanOrEqual(1 + 3)
        expect(stateOf(hook.received.at(-1)!)).toBe("TASK_STATE_COMPLETED")
        // Kept in order: the artifacts that got through rise.
        const names = bodies.flatMap((body) =>
          body.artifactUpdate === undefined ? [] : [Number(body.artifactUpdate.artifact.name)]
        )
        expect([...names].sort((x, y) => x - y)).toEqual(names)
        const failed = yield* Metric.value(
          internalMetrics.tagged(internalMetrics.serverPushFailed, { agent: server.card.name })
        )
        expect(failed.count).toBeGreaterThan(0)
        const overflows = logs.lines.filter((line) => line.annotations.reason === "Overflow")
        expect(overflows).toHaveLength(failed.count)
        expect(overflows.every((line) => line.annotations.taskId === task.id)).toBe(true)
      }).pipe(Effect.provide(logs.layer))
    },
    30_000
  )
})
