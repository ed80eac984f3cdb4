import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schema, Scope } from "effect"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { eventually, makeClient, send, textOf } from "../../../fixtures/serverAgents.js"

describe("durable runs on replicas", () => {
  it.scopedLive(
    "a replica that stops inside a step leaves its run to another, which resumes it once its claim lapses",
    () =>
      Effect.gen(function*() {
        const url = databaseUrl()
        const calls: Array<string> = []
        // Replica a's step two never ends (it is stopped there); b's does.
        const agent = (two: Effect.Effect<void>): AgentExecutor.Agent => () =>
          Effect.gen(function*() {
            yield* AgentExecutor.step("one", Effect.sync(() => calls.push("one")), { success: Schema.Number })
            yield* AgentExecutor.step("two", Effect.as(Effect.zipRight(Effect.sync(() => calls.push("two")), two), 2), {
              success: Schema.Number
            })
            return AgentExecutor.completedText("done")
          })
        const serve = (name: string, two: Effect.Effect<void>) =>
          Effect.flatMap(Scope.make(), (scope) =>
            Effect.map(
              Scope.extend(
                A2AServer.make({
                  agent: agent(two),
                  card: { name, description: "one of two" },
                  port: 0,
                  durable: true,
                  shutdownTimeout: "50 millis",
                  taskStore: A2AServer.TaskStoreConfig.Postgres({ url }),
                  replication: { url, lease: "2 seconds", sweep: "200 millis" }
                }),
                scope
              ),
              (server) => ({ server, close: Scope.close(scope, Exit.void) })
            ))
        const a = yield* serve("a", Effect.never)
        const started = yield* send(yield* makeClient(a.server.url), "go", {}, true)
        yield* eventually(Effect.sync(() => calls.length), (n) => n === 2)
        const b = yield* serve("b", Effect.void)
        yield* Effect.addFinalizer(() => b.close)
        yield* a.close
        const client = yield* makeClient(b.server.url)
        const done = yield* eventually(
          Effect.promise(() => client.getTask({ tenant: "", id: started.id, historyLength: undefined })),
          (task) => task.status?.state === 3,
          500
        )
        expect([textOf(done), calls]).toEqual(["done", ["one", "two", "two"]])
      }),
    60_000
  )
})
