import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Schema, Scope } from "effect"
import { createRequire } from "node:module"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { eventually, makeClient, send, textOf } from "../../../fixtures/serverAgents.js"
import { taskOn } from "../durable/servers.js"

/** Runs `statements` on the test's PostgreSQL. */
const query = (statements: string) =>
  Effect.promise(async () => {
    const pg = createRequire(import.meta.url)("pg")
    const client = new (pg.default ?? pg).Client({ connectionString: databaseUrl() })
    await client.connect()
    try {
      await client.query(statements)
    } finally {
      await client.end()
    }
  })

/** Deletes the run a test left to resume, which a later test's replica (of this file or the next) would resume. */
const forget = (taskId: string) =>
  query(
    ["effect_a2a_task_runs", "effect_a2a_durable_runs", "effect_a2a_durable_steps"]
      .map((table) => `delete from ${table} where task_id = '${taskId}';`).join("\n")
  )

/** A replica of the durable `agent` on the test's PostgreSQL, which the test stops: `close` tells how long it took. */
const replica = (name: string, agent: AgentExecutor.Agent) =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.map(
      Scope.extend(
        A2AServer.make({
          agent,
          card: { name, description: "a replica" },
          port: 0,
          durable: true,
          shutdownTimeout: "50 millis",
          taskStore: A2AServer.TaskStoreConfig.Postgres({ url: databaseUrl() }),
          replication: { url: databaseUrl(), lease: "2 seconds", sweep: "100 millis" }
        }),
        scope
      ),
      (server) => ({ server, close: Effect.timed(Scope.close(scope, Exit.void)) })
    ))

describe("durable runs on replicas", () => {
  it.scopedLive(
    "a replica that stops inside a step leaves its run to another, which resumes it once its claim lapses",
    () =>
      Effect.gen(function*() {
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
        const a = yield* replica("a", agent(Effect.never))
        const started = yield* send(yield* makeClient(a.server.url), "go", {}, true)
        yield* eventually(Effect.sync(() => calls.length), (n) => n === 2)
        const b = yield* replica("b", agent(Effect.void))
        yield* Effect.addFinalizer(() => b.close)
        yield* a.close
        const done = yield* eventually(taskOn(b.server.url, started.id), (task) => task.status?.state === 3, 500)
        expect([textOf(done), calls]).toEqual(["done", ["one", "two", "two"]])
      }),
    60_000
  )

  it.scopedLive(
    "a left run is resumed by one replica of two, and each replica closes promptly with a lapsed claim about",
    () =>
      Effect.gen(function*() {
        const entered: Array<string> = []
        // Every replica's step two waits forever: the run stays where it was resumed, so a second resume shows.
        const agent = (name: string): AgentExecutor.Agent => () =>
          Effect.gen(function*() {
            yield* AgentExecutor.step("one", Effect.sync(() => entered.push(`${name}:one`)), { success: Schema.Number })
            yield* AgentExecutor.step(
              "two",
              Effect.as(Effect.zipRight(Effect.sync(() => entered.push(`${name}:two`)), Effect.never), 2),
              { success: Schema.Number }
            )
            return AgentExecutor.completedText("done")
          })
        const a = yield* replica("a", agent("a"))
        const started = yield* send(yield* makeClient(a.server.url), "go", {}, true)
        yield* Effect.addFinalizer(() => forget(started.id))
        yield* eventually(Effect.sync(() => entered.length), (n) => n === 2, 500)
        const b = yield* replica("b", agent("b"))
        const c = yield* replica("c", agent("c"))
        // Its own sweep, still running while it stops, finds its run's lapsed claim too.
        const [aClose] = yield* a.close
        yield* eventually(Effect.sync(() => entered.length), (n) => n >= 3, 500)
        // Several sweeps of both later, still one resume.
        yield* Effect.sleep("1500 millis")
        const resumedBy = entered.slice(2)
        const [bClose] = yield* b.close
        const [cClose] = yield* c.close
        expect({
          resumes: resumedBy.length,
          closes: [aClose, bClose, cClose].map((d) => Duration.toMillis(d) < 3000)
        }).toEqual({ resumes: 1, closes: [true, true, true] })
      }),
    60_000
  )

  it.scopedLive(
    "a resumed run whose store refuses an append once goes on holding its claim: no sweep resumes it again",
    () =>
      Effect.gen(function*() {
        const entered: Array<string> = []
        const agent = (name: string): AgentExecutor.Agent => () =>
          Effect.gen(function*() {
            yield* AgentExecutor.step("one", Effect.sync(() => entered.push(`${name}:one`)), { success: Schema.Number })
            // A resumed run publishes only after what was published: a's run published nothing here.
            if (name !== "a") { for (const n of [1, 2, 3, 4]) yield* AgentExecutor.status(`${name} goes on ${n}`) }
            yield* AgentExecutor.step(
              "two",
              Effect.as(Effect.zipRight(Effect.sync(() => entered.push(`${name}:two`)), Effect.never), 2),
              { success: Schema.Number }
            )
            return AgentExecutor.completedText("done")
          })
        const a = yield* replica("a", agent("a"))
        const started = yield* send(yield* makeClient(a.server.url), "go", {}, true)
        yield* Effect.addFinalizer(() => forget(started.id))
        yield* eventually(Effect.sync(() => entered.length), (n) => n === 2, 500)
        yield* a.close
        // The next append of an event (the resumed run's status) is refused once, as by a passing outage.
        yield* query(
          `create sequence refused_once;
          create function refuse_once() returns trigger language plpgsql as $$
            begin if nextval('refused_once') = 1 then raise exception 'refused once'; end if; return new; end $$;
          create trigger refuse_once before insert on effect_a2a_task_store_events
            for each row execute function refuse_once()`
        )
        yield* Effect.addFinalizer(() =>
          query(
            `drop trigger refuse_once on effect_a2a_task_store_events;
            drop function refuse_once; drop sequence refused_once`
          )
        )
        const b = yield* replica("b", agent("b"))
        yield* Effect.addFinalizer(() => b.close)
        yield* eventually(Effect.sync(() => entered.length), (n) => n >= 3, 500)
        // Many sweeps later, still the one resume.
        yield* Effect.sleep("1500 millis")
        expect(entered).toEqual(["a:one", "a:two", "b:two"])
      }),
    60_000
  )
})
