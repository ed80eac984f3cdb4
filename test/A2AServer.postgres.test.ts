/**
 * A2AServer on the SDK's `DatabaseTaskStore` over PostgreSQL: the URL from
 * the `test/globalSetup.postgres.ts` global setup, `DATABASE_URL`, or else an
 * embedded PostgreSQL started for this file.
 */
import { SendMessageRequest, TaskState } from "@a2a-js/sdk"
import { ServerCallContext, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { PgClient } from "@effect/sql-pg"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Redacted, Scope } from "effect"
import { inject } from "vitest"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Observability from "../src/Observability.js"
import * as Part from "../src/Part.js"
import { counter, othersSeeNothing, serve, tasksOf, transports, untouched } from "./fixtures/callers.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import { type RunningPostgres, startPostgres } from "./fixtures/postgres.js"
import {
  captureLogs,
  charging,
  eventually,
  makeClient,
  rpc,
  seededTask,
  send,
  textOf,
  userMessage
} from "./fixtures/serverAgents.js"

const card = { name: "server-pg-test", description: "A2AServer on PostgreSQL" }

const echo: AgentExecutor.Agent = (request) => {
  return Effect.succeed(AgentExecutor.completedText(`echo ${Part.textOf(request.message.parts)}`))
}

let own: RunningPostgres | undefined
let url = ""

beforeAll(async () => {
  const provided = inject("databaseUrls") !== undefined ? databaseUrl() : process.env["DATABASE_URL"]
  if (provided !== undefined && provided !== "") {
    url = provided
  } else {
    own = await startPostgres()
    url = own.url
  }
})

afterAll(async () => {
  await own?.stop()
})

describe("A2AServer on PostgreSQL", () => {
  it.live("two replicas start together on one database; a task written by one is read by the other after a restart", () =>
    Effect.gen(function*() {
      const taskStore = A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2 })
      const first = yield* Scope.make()
      // Both run the migration at once: it must be idempotent under concurrency.
      const [a, b] = yield* Effect.all([
        A2AServer.make({ agent: echo, card, taskStore }),
        A2AServer.make({ agent: echo, card, taskStore })
      ], { concurrency: 2 }).pipe(Scope.extend(first))
      const task = yield* send(yield* makeClient(a.url), "shared")
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const fromB = yield* Effect.promise(async () =>
        (await makeClient(b.url).pipe(Effect.runPromise)).getTask({ tenant: "", id: task.id, historyLength: undefined })
      )
      expect(textOf(fromB)).toBe("echo shared")
      yield* Scope.close(first, Exit.void)

      const second = yield* Scope.make()
      const restarted = yield* Scope.extend(A2AServer.make({ agent: echo, card, taskStore }), second)
      const client = yield* makeClient(restarted.url)
      const loaded = yield* Effect.promise(() => client.getTask({ tenant: "", id: task.id, historyLength: undefined }))
      expect(loaded.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(loaded)).toBe("echo shared")
      yield* Scope.close(second, Exit.void)
    }))

  it.live("with authenticate, across replicas each caller sees only its own tasks: another caller on the other replica gets TaskNotFound on every operation and transport", () =>
    Effect.scoped(Effect.gen(function*() {
      const taskStore = A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2 })
      const first = yield* serve({ taskStore })
      const second = yield* serve({ taskStore })
      const tasks = yield* tasksOf(first.server.url)
      for (const transport of transports) {
        yield* othersSeeNothing(second.server.url, second.server.rpcUrl, transport, tasks)
      }
      yield* untouched(second.server.url, tasks)
      expect(first.runs.length + second.runs.length).toBe(3)
      // The other replica counts the misses on the task the first one holds.
      yield* eventually(counter(Observability.serverForbidden, second.server.card.name), (count) => count >= 27)
    })))

  it.live("a database that ends the store's connections (a restart, a failover) does not end the process; the next request reconnects", () => {
    const logs = captureLogs()
    // Named, so that only this server's connections are ended: other test files share the database.
    const named = `${url}${url.includes("?") ? "&" : "?"}application_name=effect-a2a-ended`
    return Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent: echo,
        card,
        taskStore: A2AServer.TaskStoreConfig.Postgres({ url: named, poolSize: 2 })
      })
      const client = yield* makeClient(server.url)
      expect((yield* send(client, "before")).status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const sql = yield* PgClient.PgClient
      const [ended] = yield* sql<{ readonly n: number }>`
        select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where application_name = 'effect-a2a-ended'`
      expect(ended?.n).toBeGreaterThan(0)
      yield* eventually(
        Effect.sync(() => logs.lines),
        (lines) => lines.some((line) => line.message.includes("lost an idle connection"))
      )
      const after = yield* send(client, "after")
      expect(textOf(after)).toBe("echo after")
    }).pipe(Effect.scoped, Effect.provide(logs.layer), Effect.provide(PgClient.layer({ url: Redacted.make(url) })))
  })

  it.live(
    "a cancel that reaches another server on the database stops the run at once, told by the store's NOTIFY: its side effect never happens",
    () =>
      Effect.gen(function*() {
        const taskStore = A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2 })
        const { agent, sideEffects, started } = yield* charging("10 seconds")
        const a = yield* A2AServer.make({ agent, card, taskStore })
        const b = yield* A2AServer.make({ agent, card, taskStore })
        const blocking = yield* Effect.fork(send(yield* makeClient(a.url), "book"))
        const id = yield* Deferred.await(started)
        // The run's first event is appended as the agent starts: B finds the task once it is committed.
        yield* eventually(
          Effect.map(rpc(b.rpcUrl, "GetTask", { id }), (response) => JSON.parse(response.text)),
          (found) => found.result?.status?.state === "TASK_STATE_WORKING"
        )
        const canceled = JSON.parse((yield* rpc(b.rpcUrl, "CancelTask", { id })).text)
        expect(canceled.result?.status?.state).toBe("TASK_STATE_CANCELED")
        const final = yield* Fiber.join(blocking).pipe(Effect.timeout("8 seconds"))
        expect(final.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
        expect(sideEffects).toEqual([])
        const stored = JSON.parse((yield* rpc(a.rpcUrl, "GetTask", { id })).text)
        expect(stored.result?.status?.state).toBe("TASK_STATE_CANCELED")
      }).pipe(Effect.scoped),
    { timeout: 30_000 }
  )

  it.live(
    "a cancel taken while the run's server has lost its LISTEN connection stops the run once that connection is back",
    () => {
      const logs = captureLogs()
      return Effect.gen(function*() {
        const sql = yield* PgClient.PgClient
        // A's own role, so that A alone can be kept from reconnecting while B takes the cancel.
        const role = `effect_a2a_cancel_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
        yield* sql.unsafe(`create role ${role} login superuser password 'secret'`)
        yield* Effect.addFinalizer(() =>
          Effect.ignore(Effect.gen(function*() {
            yield* sql.unsafe(`alter role ${role} login`)
            yield* sql`select pg_terminate_backend(pid) from pg_stat_activity where usename = ${role}`
            yield* sql.unsafe(`drop role ${role}`)
          }))
        )
        const asA = new URL(url)
        asA.username = role
        asA.password = "secret"
        const { agent, sideEffects, started } = yield* charging("15 seconds")
        const a = yield* A2AServer.make({
          agent,
          card,
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url: asA.href, poolSize: 2 })
        })
        const b = yield* A2AServer.make({
          agent,
          card,
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2 })
        })
        const blocking = yield* Effect.fork(send(yield* makeClient(a.url), "book"))
        const id = yield* Deferred.await(started)
        yield* eventually(
          Effect.map(rpc(b.rpcUrl, "GetTask", { id }), (response) => JSON.parse(response.text)),
          (found) => found.result?.status?.state === "TASK_STATE_WORKING"
        )
        yield* sql.unsafe(`alter role ${role} nologin`)
        yield* sql`select pg_terminate_backend(pid) from pg_stat_activity where usename = ${role}`
        yield* eventually(
          Effect.sync(() => logs.lines),
          (lines) => lines.some((line) => line.message.includes("The task store lost its LISTEN connection"))
        )
        const canceled = JSON.parse((yield* rpc(b.rpcUrl, "CancelTask", { id })).text)
        expect(canceled.result?.status?.state).toBe("TASK_STATE_CANCELED")
        // Told nothing while it cannot connect: the run goes on.
        yield* Effect.sleep("1 second")
        expect(Option.isNone(yield* Fiber.poll(blocking))).toBe(true)
        yield* sql.unsafe(`alter role ${role} login`)
        const final = yield* Fiber.join(blocking).pipe(Effect.timeout("10 seconds"))
        expect(final.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
        expect(sideEffects).toEqual([])
        expect(logs.lines.some((line) => line.message.includes("The task store's LISTEN connection is back"))).toBe(
          true
        )
      }).pipe(Effect.scoped, Effect.provide(logs.layer), Effect.provide(PgClient.layer({ url: Redacted.make(url) })))
    },
    60_000
  )

  it.live("ids the task table cannot hold are refused with -32602 before the agent runs; ids that fit are served", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const agent: AgentExecutor.Agent = (request) =>
        Effect.sync(() => ran.push(request.contextId)).pipe(Effect.as(AgentExecutor.completedText("ran")))
      const server = yield* A2AServer.make({
        agent,
        card,
        taskStore: A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2 })
      })
      const post = (method: string, params: unknown) =>
        Effect.map(
          rpc(server.rpcUrl, method, params),
          ({ text }) => JSON.parse(text) as { result?: unknown; error?: { code: number; message: string } }
        )
      const sendWith = (contextId: string) =>
        post(
          "SendMessage",
          SendMessageRequest.toJSON({
            tenant: "",
            message: userMessage("hi", { contextId }),
            configuration: undefined,
            metadata: {}
          })
        )
      const tooLong = yield* sendWith("c".repeat(37))
      expect(tooLong.error).toMatchObject({
        code: -32602,
        message: "contextId must be at most 36 characters for this server's task store"
      })
      expect((yield* sendWith("c\u0000")).error).toMatchObject({
        code: -32602,
        message: "contextId must not contain NUL (U+0000)"
      })
      expect((yield* post("GetTask", { id: "t\u0000" })).error).toMatchObject({ code: -32602 })
      // PostgreSQL would store both as U+FFFD: one context, one tenant.
      expect((yield* sendWith("c\uD800")).error).toMatchObject({
        code: -32602,
        message: "contextId must be well-formed Unicode (no lone surrogate)"
      })
      expect((yield* post("ListTasks", { tenant: "acme-\uDFFF" })).error).toMatchObject({ code: -32602 })
      const referencing = SendMessageRequest.toJSON({
        tenant: "",
        message: userMessage("hi", { referenceTaskIds: ["r\u0000"] }),
        configuration: undefined,
        metadata: {}
      })
      expect((yield* post("SendMessage", referencing)).error).toMatchObject({
        code: -32602,
        message: "referenceTaskIds must not contain NUL (U+0000)"
      })
      expect(ran).toEqual([])
      // 36 characters fit, however many UTF-16 units they take.
      const wide = "\u{1F600}".repeat(36)
      expect((yield* sendWith(wide)).error).toBeUndefined()
      expect(ran).toEqual([wide])
    }).pipe(Effect.scoped))

  it.live(
    "with retention, ended tasks whose last status is older are deleted; paused, running and recent ones stay",
    () =>
      Effect.gen(function*() {
        const anonymous = new ServerCallContext({ user: new UnauthenticatedUser() })
        const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString()
        const ids = {
          done: crypto.randomUUID(),
          canceled: crypto.randomUUID(),
          input: crypto.randomUUID(),
          working: crypto.randomUUID()
        }
        const seeded = (id: string, state: TaskState) => seededTask(id, state, twoHoursAgo)
        const seeding = yield* Scope.make()
        const seeder = yield* Scope.extend(
          A2AServer.make({ agent: echo, card, taskStore: A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2 }) }),
          seeding
        )
        yield* Effect.promise(async () => {
          await seeder.taskStore.save(seeded(ids.done, TaskState.TASK_STATE_COMPLETED), anonymous)
          await seeder.taskStore.save(seeded(ids.canceled, TaskState.TASK_STATE_CANCELED), anonymous)
          await seeder.taskStore.save(seeded(ids.input, TaskState.TASK_STATE_INPUT_REQUIRED), anonymous)
          await seeder.taskStore.save(seeded(ids.working, TaskState.TASK_STATE_WORKING), anonymous)
        })
        const recent = yield* send(yield* makeClient(seeder.url), "recent")
        expect((yield* Effect.promise(() => seeder.taskStore.load(ids.done, anonymous)))?.id).toBe(ids.done)
        yield* Scope.close(seeding, Exit.void)

        const server = yield* A2AServer.make({
          agent: echo,
          card,
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url, poolSize: 2, retention: "1 hour" })
        })
        const load = (id: string) => Effect.promise(() => server.taskStore.load(id, anonymous))
        yield* eventually(load(ids.done), (task) => task === undefined, 500)
        expect(yield* load(ids.canceled)).toBeUndefined()
        expect((yield* load(ids.input))?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        expect((yield* load(ids.working))?.status?.state).toBe(TaskState.TASK_STATE_WORKING)
        expect((yield* load(recent.id))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      }).pipe(Effect.scoped),
    { timeout: 60_000 }
  )

  it.effect("an unreachable PostgreSQL fails the layer with TaskStoreError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(A2AServer.make({
        agent: echo,
        card,
        taskStore: A2AServer.TaskStoreConfig.Postgres({ url: "postgresql://nobody:x@127.0.0.1:1/none" })
      })))
      expect(error._tag).toBe("TaskStoreError")
    }))
})
