/**
 * Two replicas on one PostgreSQL act as one server: a run started on A is
 * followed from B, and a caller that lost its stream on A resumes on B right
 * after the last event it saw. PostgreSQL is a throwaway one started here,
 * the way the tests start theirs (`DATABASE_URL` names another).
 *
 *   npx tsx examples/replicas.ts
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Option, Stream } from "effect"
import { A2AServer, AgentExecutor, Part, RemoteAgent, type RemoteEvent } from "effect-a2a"
import { startPostgres } from "../test/fixtures/postgres.js"

/** Reports a few steps, a little apart, then completes. */
const steps: AgentExecutor.Agent = (request) =>
  Effect.gen(function*() {
    for (let i = 1; i <= 4; i++) {
      yield* Effect.sleep("200 millis")
      yield* AgentExecutor.status(`step ${i} of ${Part.textOf(request.message.parts)}`)
    }
    return AgentExecutor.completedText("all steps done")
  })

const line = (where: string) => (event: RemoteEvent.RemoteEvent) =>
  Effect.sync(() =>
    console.log(
      `${where}: ${
        event._tag === "Status"
          ? event.text || event.state
          : event._tag === "Finished"
          ? `finished ${event.outcome._tag}`
          : event._tag
      }`
    )
  )

const program = Effect.gen(function*() {
  const postgres = yield* Effect.acquireRelease(
    Effect.promise(() => startPostgres()),
    (db) => Effect.promise(() => db.stop())
  )
  const replica = (name: string) =>
    A2AServer.make({
      agent: steps,
      card: { name, description: "one of two replicas" },
      taskStore: A2AServer.TaskStoreConfig.Postgres({ url: postgres.url }),
      replication: { url: postgres.url }
    })
  const a = yield* replica("replica-a")
  const b = yield* replica("replica-b")
  console.log(`replica ${Option.getOrElse(a.replica, () => "?")} on ${a.url}`)
  console.log(`replica ${Option.getOrElse(b.replica, () => "?")} on ${b.url}`)

  const onA = yield* RemoteAgent.make({ name: "steps", url: a.url })
  const onB = yield* RemoteAgent.make({ name: "steps", url: b.url })

  // Started on A; its first event names the task, which B then follows to the end.
  const first = yield* onA.stream("the plan").pipe(Stream.take(1), Stream.runHead)
  const taskId = Option.flatMap(first, (event) => event._tag === "Finished" ? Option.none() : Option.some(event.taskId))
  if (Option.isNone(taskId)) return
  yield* line("A (then the caller left)")(Option.getOrThrow(first))
  yield* onB.resubscribe(taskId.value).pipe(Stream.runForEach(line("B")))
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
