/**
 * A2AServer on the SDK's `DatabaseTaskStore` over PostgreSQL: the URL from
 * the `test/globalSetup.postgres.ts` global setup, `DATABASE_URL`, or else an
 * embedded PostgreSQL started for this file.
 */
import { TaskState } from "@a2a-js/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { inject } from "vitest"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { startPostgres, type RunningPostgres } from "./fixtures/postgres.js"
import { makeClient, send, textOf } from "./fixtures/serverAgents.js"

const card = { name: "server-pg-test", description: "A2AServer on PostgreSQL" }

const echo: AgentExecutor.Agent = (request) => {
  const part = request.message.parts[0]?.content
  return Effect.succeed(AgentExecutor.completedText(`echo ${part?.$case === "text" ? part.value : ""}`))
}

let own: RunningPostgres | undefined
let url = ""

beforeAll(async () => {
  const provided = (inject("databaseUrl") as string | undefined) ?? process.env["DATABASE_URL"]
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
    Effect.gen(function* () {
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

  it.effect("an unreachable PostgreSQL fails the layer with TaskStoreError", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Effect.scoped(A2AServer.make({
        agent: echo,
        card,
        taskStore: A2AServer.TaskStoreConfig.Postgres({ url: "postgresql://nobody:x@127.0.0.1:1/none" })
      })))
      expect(error._tag).toBe("TaskStoreError")
    }))
})
