/**
 * A message that continues a paused task while the run that paused it is
 * still ending (its run stages' end: here the replication stage letting go
 * of the task's claim, on a PostgreSQL made slow to delete it) gets a run of
 * its own: it never joins the channel that is ending.
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { createRequire } from "node:module"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as internalRunClaims from "../../../../src/internal/server/replication/runClaims.js"
import * as Part from "../../../../src/Part.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { eventually, makeClient, sendMessage, userMessage } from "../../../fixtures/serverAgents.js"

interface PgClient {
  readonly connect: () => Promise<void>
  readonly query: (text: string, values?: ReadonlyArray<unknown>) => Promise<{ readonly rows: Array<any> }>
  readonly end: () => Promise<void>
}

const pgClient = Effect.acquireRelease(
  Effect.promise(async () => {
    const pg = createRequire(import.meta.url)("pg")
    const client: PgClient = new (pg.default ?? pg).Client({ connectionString: databaseUrl() })
    await client.connect()
    return client
  }),
  (client) => Effect.promise(() => client.end().catch(() => undefined))
)

const query = (client: PgClient, text: string, values: ReadonlyArray<unknown> = []) =>
  Effect.promise(() => client.query(text, values).then((result) => result.rows))

// The claims' release (the one delete that names a token) waits for this advisory lock, held by the test.
const releaseLock = 43_043

const slowRelease = (client: PgClient) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      await client.query(
        `create or replace function effect_a2a_test_slow_release() returns trigger language plpgsql as $$
        begin
          if position('token' in current_query()) > 0 then perform pg_advisory_xact_lock(${releaseLock}); end if;
          return null;
        end $$`
      )
      await client.query(`create trigger effect_a2a_test_slow_release before delete on ${internalRunClaims.table}
        for each statement execute function effect_a2a_test_slow_release()`)
    }),
    () =>
      Effect.promise(async () => {
        await client.query(`drop trigger if exists effect_a2a_test_slow_release on ${internalRunClaims.table}`)
        await client.query("drop function if exists effect_a2a_test_slow_release()")
      })
  )

describe("a message to a task whose paused run is still ending", () => {
  it.scopedLive("runs on a channel of its own and is answered with its run's end", () =>
    Effect.gen(function*() {
      const answering = yield* Deferred.make<void>()
      const answered = yield* Deferred.make<void>()
      const agent: AgentExecutor.Agent<never> = (request) =>
        Part.textOf(request.message.parts) === "ask"
          ? Effect.succeed(AgentExecutor.InputRequired({ question: "Which account?" }))
          : Effect.zipRight(
            Deferred.succeed(answering, undefined),
            Effect.as(Deferred.await(answered), AgentExecutor.completedText("done"))
          )
      const server = yield* A2AServer.make({
        agent,
        card: { name: "follow-up", description: "follow-up" },
        replication: { url: databaseUrl(), sweep: "1 minute" },
        shutdownTimeout: "1 second"
      })
      const client = yield* makeClient(server.url)
      const locker = yield* pgClient
      const watcher = yield* pgClient
      yield* slowRelease(watcher)
      const releasesWaiting = query(
        watcher,
        `select pid from pg_stat_activity where datname = current_database() and wait_event = 'advisory'
          and query like '%token%'`
      )
      yield* query(locker, "select pg_advisory_lock($1)", [releaseLock])

      const first = yield* sendMessage(client, userMessage("ask"))
      expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      // The run's stages are ending: its claim's release waits.
      yield* eventually(releasesWaiting, (rows) => rows.length === 1)
      const followUp = yield* Effect.fork(
        sendMessage(client, userMessage("answer", { taskId: first.id, contextId: first.contextId }))
      )
      yield* Deferred.await(answering).pipe(Effect.timeout("10 seconds"))
      // The first run's stages end, and its channel with them; then the follow-up's run answers.
      yield* query(locker, "select pg_advisory_unlock($1)", [releaseLock])
      yield* eventually(releasesWaiting, (rows) => rows.length === 0)
      yield* Effect.sleep("200 millis")
      yield* Deferred.succeed(answered, undefined)

      const exit = yield* Effect.exit(Fiber.join(followUp).pipe(Effect.timeout("10 seconds")))
      expect(Exit.isSuccess(exit) ? exit.value.status?.state : String(exit)).toBe(TaskState.TASK_STATE_COMPLETED)
      const stored = yield* Effect.promise(() => client.getTask({ tenant: "", id: first.id, historyLength: undefined }))
      expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    }))
})
