/**
 * Durable runs at their edges, on SQLite servers stopped and started again:
 * steps that run at once, records that no longer read back, a value its
 * schema cannot encode, a shutdown before the run began or inside a step it
 * cannot interrupt, the hooks around a durable agent, a question raced and
 * answered twice at once, a cancel of a task that waits on its question,
 * and a key whose lease lapses before the resumed run ends. Each ends in a
 * final state, with an error id where it fails, its row gone once it ended.
 */
import type { Task } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Schema, Scope } from "effect"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as IdempotencyLedger from "../../../../src/IdempotencyLedger.js"
import * as Part from "../../../../src/Part.js"
import { eventually, keyed, makeClient, send, sendMessage, textOf } from "../../../fixtures/serverAgents.js"

const card = { name: "durable-edges", description: "durable runs at their edges" }

const databaseFile = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-durable-edges-"))),
  (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
).pipe(Effect.map((directory) => Path.join(directory, "tasks.db")))

const serve = (
  file: string,
  agent: AgentExecutor.Agent,
  options: Partial<A2AServer.Options<never, never>> = {}
) =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.map(
      Scope.extend(
        Effect.flatMap(
          // The ledger of idempotency keys beside the tasks, in a file that outlives the server too.
          Layer.buildWithScope(IdempotencyLedger.layerSqlite({ filename: `${file}.keys` }), scope),
          (ledger) =>
            Effect.provide(
              A2AServer.make({
                agent,
                card,
                port: 0,
                durable: true,
                shutdownTimeout: "50 millis",
                taskStore: A2AServer.TaskStoreConfig.Sqlite({ filename: file }),
                ...options
              }),
              ledger
            )
        ),
        scope
      ),
      (server) => ({ server, close: Scope.close(scope, Exit.void) })
    ))

// better-sqlite3 (the store's own driver) ships no types: what of it this file uses.
const Database = createRequire(import.meta.url)("better-sqlite3") as new(
  file: string,
  options: { readonly readonly: boolean }
) => { prepare: (sql: string) => { all: () => Array<unknown> }; close: () => void }

/** The durable runs the store still holds: a run's row goes once it ended. */
const rowsIn = (file: string) =>
  Effect.sync(() => {
    const db = new Database(file, { readonly: true })
    try {
      return (db.prepare("select task_id, asking from effect_a2a_durable_runs").all() as Array<
        { task_id: string; asking: number | null }
      >)
    } finally {
      db.close()
    }
  })

const taskOn = (url: string, id: string) =>
  Effect.flatMap(
    makeClient(url),
    (client) => Effect.promise(() => client.getTask({ tenant: "", id, historyLength: undefined }))
  )

const statusTexts = (task: Task) =>
  (task.history ?? []).filter((message) => message.role === 2).map((message) =>
    message.parts.flatMap((part) => part.content?.$case === "text" ? [part.content.value] : []).join("")
  )

const failedWithId = /^Agent execution failed\. \(error_id: [0-9a-f]+\)$/

describe("durable runs: places", () => {
  it.scopedLive("steps that run at once, replayed in another order, lose no later event", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const calls: Array<string> = []
      // `a` ends after `b` in the first run; replayed, both return at once, `a` first.
      const agent = (gate: Effect.Effect<void>): AgentExecutor.Agent => () =>
        Effect.gen(function*() {
          yield* Effect.all([
            AgentExecutor.step(
              "a",
              Effect.zipRight(Effect.sleep("50 millis"), AgentExecutor.status("in a")).pipe(Effect.as(1)),
              { success: Schema.Number }
            ),
            AgentExecutor.step("b", Effect.as(AgentExecutor.status("in b"), 2), { success: Schema.Number })
          ], { concurrency: "unbounded" })
          yield* AgentExecutor.status("after both")
          yield* AgentExecutor.step(
            "c",
            Effect.zipRight(Effect.sync(() => calls.push("c")), Effect.as(gate, 3)),
            { success: Schema.Number }
          )
          yield* AgentExecutor.status("after c")
          return AgentExecutor.completedText("done")
        })
      const first = yield* serve(file, agent(Effect.never))
      const started = yield* send(yield* makeClient(first.server.url), "go", {}, true)
      yield* eventually(Effect.sync(() => calls.length), (n) => n === 1)
      yield* first.close
      const second = yield* serve(file, agent(Effect.void))
      yield* Effect.addFinalizer(() => second.close)
      const done = yield* eventually(taskOn(second.server.url, started.id), (task) => task.status?.state === 3)
      expect(statusTexts(done)).toEqual(["in b", "in a", "after both", "after c", "done"])
    }))
})

describe("durable runs that cannot go on end FAILED with an error id, their row gone", () => {
  it.scopedLive("a record that no longer decodes (its schema changed between versions)", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const calls: Array<string> = []
      const v1: AgentExecutor.Agent = () =>
        Effect.zipRight(
          AgentExecutor.step("price", Effect.sync(() => (calls.push("v1"), "12 EUR")), { success: Schema.String }),
          Effect.never
        )
      const v2: AgentExecutor.Agent = () =>
        Effect.map(
          AgentExecutor.step("price", Effect.sync(() => (calls.push("v2"), 12)), { success: Schema.Number }),
          (price) => AgentExecutor.completedText(`price ${price}`)
        )
      const first = yield* serve(file, v1)
      const started = yield* send(yield* makeClient(first.server.url), "go", {}, true)
      yield* eventually(Effect.sync(() => calls.length), (n) => n === 1)
      yield* Effect.sleep("50 millis")
      yield* first.close
      const second = yield* serve(file, v2)
      yield* Effect.addFinalizer(() => second.close)
      const ended = yield* eventually(taskOn(second.server.url, started.id), (task) => task.status?.state === 4)
      expect(textOf(ended)).toMatch(failedWithId)
      // The cause (the record's text, the schema's complaint) stays in the log.
      expect(JSON.stringify(ended)).not.toMatch(/12 EUR|schema|price/)
      expect(calls).toEqual(["v1"])
      expect(yield* eventually(rowsIn(file), (rows) => rows.length === 0)).toEqual([])
    }))

  it.scopedLive("a step whose value its schema cannot encode", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const agent: AgentExecutor.Agent = () =>
        Effect.map(
          AgentExecutor.step("when", Effect.succeed(new Date(Number.NaN)), { success: Schema.Date }),
          (when) => AgentExecutor.completedText(String(when))
        )
      const server = yield* serve(file, agent)
      yield* Effect.addFinalizer(() => server.close)
      const ended = yield* send(yield* makeClient(server.server.url), "go")
      expect([ended.status?.state, textOf(ended)]).toEqual([4, expect.stringMatching(failedWithId)])
      expect(yield* eventually(rowsIn(file), (rows) => rows.length === 0)).toEqual([])
    }))
  it.scopedLive("a shutdown before the run began (its beforeExecute hook still running) leaves no task WORKING", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const entered = yield* Deferred.make<void>()
      const agent: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.completedText("done"))
      const first = yield* serve(file, agent, {
        beforeExecute: () => Effect.zipRight(Deferred.succeed(entered, undefined), Effect.never)
      })
      const started = yield* send(yield* makeClient(first.server.url), "go", {}, true)
      yield* Deferred.await(entered)
      yield* first.close
      const second = yield* serve(file, agent)
      yield* Effect.addFinalizer(() => second.close)
      // Resumed or FAILED: either way it ends.
      const ended = yield* eventually(
        taskOn(second.server.url, started.id),
        (task) => task.status?.state === 3 || task.status?.state === 4
      )
      expect([3, 4]).toContain(ended.status?.state)
    }))
})

describe("durable runs with hooks, questions and cancels", () => {
  it.scopedLive("afterExecute sees each stop to ask and the end; a run resumed after a stop settles through it", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const calls: Array<string> = []
      const finals: Array<number | undefined> = []
      const agent = (gate: Effect.Effect<void>): AgentExecutor.Agent => () =>
        Effect.gen(function*() {
          const answer = Part.textOf((yield* AgentExecutor.ask("which date?")).parts)
          yield* AgentExecutor.step(
            "book",
            Effect.zipRight(Effect.sync(() => calls.push(`book ${answer}`)), gate),
            { success: Schema.Void }
          )
          return AgentExecutor.completedText(`booked ${answer}`)
        })
      const afterExecute = (_: AgentExecutor.AgentRequest, final: AgentExecutor.FinalStatus) =>
        Effect.sync(() => {
          finals.push(final.event.status?.state)
          return final
        })
      const first = yield* serve(file, agent(Effect.never), { afterExecute })
      const client = yield* makeClient(first.server.url)
      const asked = yield* send(client, "book")
      expect([asked.status?.state, textOf(asked)]).toEqual([6, "which date?"])
      const answered = yield* send(client, "Monday", { taskId: asked.id, contextId: asked.contextId }, true)
      expect(answered.id).toBe(asked.id)
      yield* eventually(Effect.sync(() => calls.length), (n) => n === 1)
      yield* first.close
      expect(yield* rowsIn(file)).toEqual([{ task_id: asked.id, asking: null }])
      const second = yield* serve(file, agent(Effect.void), { afterExecute })
      yield* Effect.addFinalizer(() => second.close)
      const done = yield* eventually(taskOn(second.server.url, asked.id), (task) => task.status?.state === 3)
      expect(textOf(done)).toBe("booked Monday")
      expect(calls).toEqual(["book Monday", "book Monday"])
      expect(finals).toEqual([6, 3])
      expect(yield* eventually(rowsIn(file), (rows) => rows.length === 0)).toEqual([])
    }))
  it.scopedLive("a cancel of a task waiting on its question ends its run: its row goes", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const agent: AgentExecutor.Agent = () =>
        Effect.map(AgentExecutor.ask("which date?"), (answer) => AgentExecutor.completedText(Part.textOf(answer.parts)))
      const server = yield* serve(file, agent)
      yield* Effect.addFinalizer(() => server.close)
      const client = yield* makeClient(server.server.url)
      const asked = yield* send(client, "book")
      expect(asked.status?.state).toBe(6)
      expect(yield* rowsIn(file)).toEqual([{ task_id: asked.id, asking: 1 }])
      const canceled = yield* Effect.promise(() => client.cancelTask({ tenant: "", id: asked.id, metadata: {} }))
      expect(canceled.status?.state).toBe(5)
      expect(yield* eventually(rowsIn(file), (rows) => rows.length === 0)).toEqual([])
    }))

  it.scopedLive("an ask raced against a timer still stops the run INPUT_REQUIRED", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const agent: AgentExecutor.Agent = () =>
        Effect.map(
          Effect.race(
            Effect.map(AgentExecutor.ask("which date?"), (answer) => Part.textOf(answer.parts)),
            Effect.as(Effect.sleep("300 millis"), "no answer")
          ),
          (answer) => AgentExecutor.completedText(answer)
        )
      const server = yield* serve(file, agent)
      yield* Effect.addFinalizer(() => server.close)
      const client = yield* makeClient(server.server.url)
      const asked = yield* send(client, "book")
      expect([asked.status?.state, textOf(asked)]).toEqual([6, "which date?"])
      const answered = yield* send(client, "Monday", { taskId: asked.id, contextId: asked.contextId })
      expect([answered.status?.state, textOf(answered)]).toEqual([3, "Monday"])
    }))
})

describe("durable runs: answers at once", () => {
  it.scopedLive("two answers to one question at once: one is the answer, the step after it runs once", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const calls: Array<string> = []
      const agent: AgentExecutor.Agent = () =>
        Effect.gen(function*() {
          const answer = Part.textOf((yield* AgentExecutor.ask("which date?")).parts)
          yield* AgentExecutor.step(
            "book",
            Effect.zipRight(Effect.sync(() => calls.push(`book ${answer}`)), Effect.sleep("100 millis")),
            { success: Schema.Void }
          )
          return AgentExecutor.completedText(`booked ${answer}`)
        })
      const server = yield* serve(file, agent)
      yield* Effect.addFinalizer(() => server.close)
      const client = yield* makeClient(server.server.url)
      const asked = yield* send(client, "book")
      const answers = yield* Effect.all(
        ["Monday", "Tuesday"].map((text) =>
          Effect.exit(send(client, text, { taskId: asked.id, contextId: asked.contextId }))
        ),
        { concurrency: "unbounded" }
      )
      const done = yield* eventually(taskOn(server.server.url, asked.id), (task) => task.status?.state === 3)
      expect(calls).toHaveLength(1)
      expect(textOf(done)).toBe(calls[0]!.replace("book", "booked"))
      expect(answers.filter(Exit.isSuccess)).toHaveLength(1)
    }))
})

describe("durable runs: a step a shutdown cannot interrupt", () => {
  it.scopedLive("the run is left to resume, not ended FAILED", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const calls: Array<string> = []
      const agent = (gate: Effect.Effect<void>): AgentExecutor.Agent => () =>
        Effect.gen(function*() {
          yield* AgentExecutor.step(
            "charge",
            Effect.uninterruptible(Effect.zipRight(Effect.sync(() => calls.push("charge")), gate)),
            { success: Schema.Void }
          )
          return AgentExecutor.completedText("charged")
        })
      const opened = yield* Deferred.make<void>()
      const first = yield* serve(file, agent(Deferred.await(opened)))
      const started = yield* send(yield* makeClient(first.server.url), "go", {}, true)
      yield* eventually(Effect.sync(() => calls.length), (n) => n === 1)
      yield* first.close
      yield* Deferred.succeed(opened, undefined)
      const second = yield* serve(file, agent(Effect.void))
      yield* Effect.addFinalizer(() => second.close)
      const ended = yield* eventually(
        taskOn(second.server.url, started.id),
        (task) => task.status?.state === 3 || task.status?.state === 4
      )
      expect([ended.status?.state, textOf(ended)]).toEqual([3, "charged"])
    }))
})

describe("durable runs with a key", () => {
  it.scopedLive("a resumed run outlasts its key's lease: not recorded FAILED, and a repeat of the key gets its end", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const calls: Array<string> = []
      const agent = (gate: Effect.Effect<void>): AgentExecutor.Agent => () =>
        Effect.gen(function*() {
          yield* AgentExecutor.step("one", Effect.sync(() => calls.push("one")), { success: Schema.Number })
          yield* AgentExecutor.step("two", Effect.zipRight(Effect.sync(() => calls.push("two")), gate), {
            success: Schema.Void
          })
          return AgentExecutor.completedText("done")
        })
      const idempotency = { lease: "300 millis", sweepEvery: "100 millis", wait: "2 seconds" } as const
      const first = yield* serve(file, agent(Effect.never), { idempotency })
      const started = yield* sendMessage(yield* makeClient(first.server.url), keyed("go", "key-2"), {}, true)
      yield* eventually(Effect.sync(() => calls.length), (n) => n === 2)
      yield* first.close
      // The resumed step takes longer than the lease the first server's entry was left with.
      const second = yield* serve(file, agent(Effect.sleep("1500 millis")), { idempotency })
      yield* Effect.addFinalizer(() => second.close)
      const ended = yield* eventually(
        taskOn(second.server.url, started.id),
        (task) => task.status?.state === 3 || task.status?.state === 4,
        400
      )
      yield* Effect.sleep("200 millis")
      const last = yield* taskOn(second.server.url, started.id)
      expect([ended.status?.state, last.status?.state, textOf(last)]).toEqual([3, 3, "done"])
      // A repeat of the key gets the task's end, not the task as it was when the first server stopped.
      const repeat = yield* sendMessage(yield* makeClient(second.server.url), keyed("go", "key-2"))
      expect([repeat.id, repeat.status?.state, calls]).toEqual([started.id, 3, ["one", "two", "two"]])
    }))
})
