import type { Task } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Schema, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as Part from "../../../../src/Part.js"
import { eventually, makeClient, send, textOf } from "../../../fixtures/serverAgents.js"

const card = { name: "durable-test", description: "a run that outlives its server" }

const databaseFile = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-durable-"))),
  (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
).pipe(Effect.map((directory) => Path.join(directory, "tasks.db")))

/** What the agent's steps did, across every server of a test. */
interface Effects {
  readonly calls: Array<string>
}

/**
 * Step one, a status, step two (which `gate` holds until it opens), then a
 * status and the end: the first server is stopped inside step two.
 */
const agent = (effects: Effects, gate: Effect.Effect<void>): AgentExecutor.Agent => (request) =>
  Effect.gen(function*() {
    const one = yield* AgentExecutor.step(
      "one",
      Effect.sync(() => {
        effects.calls.push("one")
        return `seat for ${Part.textOf(request.message.parts)}`
      }),
      { success: Schema.String }
    )
    yield* AgentExecutor.status(`after one: ${one}`)
    const two = yield* AgentExecutor.step(
      "two",
      Effect.zipRight(Effect.sync(() => effects.calls.push("two")), Effect.as(gate, "paid")),
      { success: Schema.String }
    )
    yield* AgentExecutor.status(`after two: ${two}`)
    return AgentExecutor.completedText(`${one}, ${two}`)
  })

const serve = (file: string, effects: Effects, gate: Effect.Effect<void>) =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.map(
      Scope.extend(
        A2AServer.make({
          agent: agent(effects, gate),
          card,
          port: 0,
          durable: true,
          shutdownTimeout: "50 millis",
          taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: file })
        }),
        scope
      ),
      (server) => ({ server, close: Scope.close(scope, Exit.void) })
    ))

const statusTexts = (task: Task) =>
  (task.history ?? []).filter((message) => message.role === 2).map((message) =>
    message.parts.flatMap((part) => part.content?.$case === "text" ? [part.content.value] : []).join("")
  )

describe("durable runs on one SQLite server", () => {
  it.scopedLive("a run stopped inside a step goes on at the next start: step one is not run again", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      const first = yield* serve(file, effects, Effect.never)
      const client = yield* makeClient(first.server.url)
      const started = yield* send(client, "LH400", {}, true)
      yield* eventually(Effect.sync(() => effects.calls), (calls) => calls.includes("two"))
      yield* first.close
      expect(effects.calls).toEqual(["one", "two"])

      const opened = yield* Deferred.make<void>()
      const second = yield* serve(file, effects, Deferred.await(opened))
      yield* Effect.addFinalizer(() => second.close)
      const again = yield* makeClient(second.server.url)
      yield* eventually(Effect.sync(() => effects.calls.length), (n) => n === 3)
      yield* Deferred.succeed(opened, undefined)
      const done = yield* eventually(
        Effect.promise(() => again.getTask({ tenant: "", id: started.id, historyLength: undefined })),
        (task) => task.status?.state === 3
      )
      expect(effects.calls).toEqual(["one", "two", "two"])
      expect(textOf(done)).toBe("seat for LH400, paid")
      // The status published before the stop is not published again: one stream, nothing twice.
      expect(statusTexts(done)).toEqual(["after one: seat for LH400", "after two: paid", "seat for LH400, paid"])
    }))
})
