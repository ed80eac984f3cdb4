/**
 * A message to the task of a durable run whose replica stopped, reaching
 * another replica before its sweep found the run's claim lapsed: the run
 * goes on from its records, its recorded steps not run again.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Schema, Scope } from "effect"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as Part from "../../../../src/Part.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { eventually, makeClient, send, textOf } from "../../../fixtures/serverAgents.js"

/** Step one, then step two held by `gate`, then the end; `calls` what the steps did, on every replica. */
const agent = (calls: Array<string>, gate: Effect.Effect<void>): AgentExecutor.Agent => (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    const one = yield* AgentExecutor.step("one", Effect.sync(() => (calls.push(`one ${text}`), `seat for ${text}`)), {
      success: Schema.String
    })
    const two = yield* AgentExecutor.step(
      "two",
      Effect.zipRight(Effect.sync(() => calls.push(`two ${text}`)), Effect.as(gate, "paid")),
      { success: Schema.String }
    )
    return AgentExecutor.completedText(`${one}, ${two}`)
  })

const replica = (calls: Array<string>, gate: Effect.Effect<void>, sweep: Duration.DurationInput) =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.map(
      Scope.extend(
        A2AServer.make({
          agent: agent(calls, gate),
          card: { name: "durable-replicas", description: "a run that outlives its replica" },
          port: 0,
          durable: true,
          shutdownTimeout: "50 millis",
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url: databaseUrl(), poolSize: 2 }),
          replication: { url: databaseUrl(), lease: "1 second", sweep }
        }),
        scope
      ),
      (server) => ({ server, close: Scope.close(scope, Exit.void) })
    ))

describe("durable runs on replicas", () => {
  it.scopedLive("a message to the task of a run whose replica stopped goes on with the run, no step run again", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const a = yield* replica(calls, Effect.never, "200 millis")
      // B's sweep comes late: the message reaches B before B resumes the run.
      const b = yield* replica(calls, Effect.void, "1 minute")
      yield* Effect.addFinalizer(() => b.close)
      const started = yield* send(yield* makeClient(a.server.url), "LH400", {}, true)
      yield* eventually(Effect.sync(() => calls.length), (n) => n === 2)
      yield* a.close
      const answer = yield* send(yield* makeClient(b.server.url), "LH401", {
        taskId: started.id,
        contextId: started.contextId
      })
      // The run's first request goes on; the message is in the task's history, no request of a run of its own.
      expect([answer.id, answer.status?.state, textOf(answer)]).toEqual([started.id, 3, "seat for LH400, paid"])
      expect(calls).toEqual(["one LH400", "two LH400", "two LH400"])
    }))
})
