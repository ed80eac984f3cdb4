import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Schema } from "effect"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as Part from "../../../../src/Part.js"
import { eventually, keyed, makeClient, send, sendMessage, textOf } from "../../../fixtures/serverAgents.js"
import { databaseFile, durableRows, failedWithId, serve, statusTexts, taskOn } from "./servers.js"

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

/** How many durable runs and step records the file holds. */
const kept = (file: string) => Effect.map(durableRows(file), ({ runs, steps }) => ({ runs: runs.length, steps }))

describe("durable runs on one SQLite server", () => {
  it.scopedLive("a run stopped inside a step goes on at the next start: step one is not run again", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      const first = yield* serve(file, agent(effects, Effect.never))
      const client = yield* makeClient(first.server.url)
      const started = yield* send(client, "LH400", {}, true)
      yield* eventually(Effect.sync(() => effects.calls), (calls) => calls.includes("two"))
      yield* first.close
      expect(effects.calls).toEqual(["one", "two"])

      const opened = yield* Deferred.make<void>()
      const second = yield* serve(file, agent(effects, Deferred.await(opened)))
      yield* Effect.addFinalizer(() => second.close)
      yield* eventually(Effect.sync(() => effects.calls.length), (n) => n === 3)
      yield* Deferred.succeed(opened, undefined)
      const done = yield* eventually(
        taskOn(second.server.url, started.id),
        (task) => task.status?.state === 3
      )
      expect(effects.calls).toEqual(["one", "two", "two"])
      expect(textOf(done)).toBe("seat for LH400, paid")
      // The status published before the stop is not published again: one stream, nothing twice.
      expect(statusTexts(done)).toEqual(["after one: seat for LH400", "after two: paid", "seat for LH400, paid"])
      // The run and its records go once its end is stored.
      expect(yield* eventually(kept(file), (now) => now.runs === 0)).toEqual({ runs: 0, steps: 0 })
    }))
})

/** An agent that asks, in a loop, until the caller says "done", each answer a recorded turn. */
const asking = (effects: Effects): AgentExecutor.Agent => () =>
  Effect.gen(function*() {
    const answers: Array<string> = []
    for (let turn = 1; turn <= 5; turn++) {
      const answer = Part.textOf((yield* AgentExecutor.ask(`turn ${turn}?`)).parts)
      yield* AgentExecutor.step("note", Effect.sync(() => effects.calls.push(`note ${answer}`)), {
        success: Schema.Number
      })
      if (answer === "done") break
      answers.push(answer)
    }
    return AgentExecutor.completedText(answers.join(" "))
  })

describe("durable runs that ask", () => {
  it.scopedLive("a question waits across a restart, and each answer goes on from where it was asked", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      const first = yield* serve(file, asking(effects))
      const client = yield* makeClient(first.server.url)
      const asked = yield* send(client, "book")
      expect([asked.status?.state, textOf(asked)]).toEqual([6, "turn 1?"])
      const second = yield* send(client, "Monday", { taskId: asked.id, contextId: asked.contextId })
      expect([second.status?.state, textOf(second)]).toEqual([6, "turn 2?"])
      yield* first.close

      const next = yield* serve(file, asking(effects))
      yield* Effect.addFinalizer(() => next.close)
      const again = yield* makeClient(next.server.url)
      const third = yield* send(again, "Tuesday", { taskId: asked.id, contextId: asked.contextId })
      expect([third.status?.state, textOf(third)]).toEqual([6, "turn 3?"])
      const done = yield* send(again, "done", { taskId: asked.id, contextId: asked.contextId })
      expect([done.status?.state, textOf(done)]).toEqual([3, "Monday Tuesday"])
      // Each turn's step ran once, though the run ran again from its start at each answer.
      expect(effects.calls).toEqual(["note Monday", "note Tuesday", "note done"])
    }))

  it.scopedLive("ask in an agent that is not durable fails its run with an error id", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const server = yield* serve(file, asking({ calls: [] }), { durable: false })
      yield* Effect.addFinalizer(() => server.close)
      const task = yield* send(yield* makeClient(server.server.url), "book")
      expect(task.status?.state).toBe(4)
      expect(textOf(task)).toMatch(failedWithId)
    }))
})

describe("durable runs resumed too often, canceled, or failing", () => {
  it.scopedLive("past maxResumes the task ends FAILED with an error id, its agent not run", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      const stuck: AgentExecutor.Agent = () =>
        Effect.zipRight(Effect.sync(() => effects.calls.push("start")), Effect.never)
      let taskId = ""
      for (let start = 1; start <= 3; start++) {
        const server = yield* serve(file, stuck, { durable: { maxResumes: 1 } })
        if (start === 1) taskId = (yield* send(yield* makeClient(server.server.url), "go", {}, true)).id
        yield* eventually(Effect.sync(() => effects.calls.length), (n) => n >= Math.min(start, 2))
        if (start < 3) yield* server.close
        else {
          yield* Effect.addFinalizer(() => server.close)
          const ended = yield* eventually(
            taskOn(server.server.url, taskId),
            (task) => task.status?.state === 4
          )
          expect(textOf(ended)).toMatch(failedWithId)
        }
      }
      // The first start and one resume; the second resume is past the bound.
      expect(effects.calls).toEqual(["start", "start"])
    }))

  it.scopedLive("a cancel of a resumed run stops it: its later steps never run", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      const first = yield* serve(file, agent(effects, Effect.never))
      const started = yield* send(yield* makeClient(first.server.url), "LH400", {}, true)
      yield* eventually(Effect.sync(() => effects.calls), (calls) => calls.includes("two"))
      yield* first.close
      const second = yield* serve(file, agent(effects, Effect.never))
      yield* Effect.addFinalizer(() => second.close)
      const client = yield* makeClient(second.server.url)
      yield* eventually(Effect.sync(() => effects.calls.length), (n) => n === 3)
      const canceled = yield* Effect.promise(() => client.cancelTask({ tenant: "", id: started.id, metadata: {} }))
      expect(canceled.status?.state).toBe(5)
      yield* Effect.sleep("100 millis")
      expect(effects.calls).toEqual(["one", "two", "two"])
    }))

  it.scopedLive("a typed failure with an error schema is recorded: the step does not run again", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      class Declined extends Schema.TaggedError<Declined>()("Declined", { card: Schema.String }) {}
      const agent = (gate: Effect.Effect<void>): AgentExecutor.Agent => () =>
        Effect.gen(function*() {
          const outcome = yield* AgentExecutor.step(
            "charge",
            Effect.zipRight(
              Effect.sync(() => effects.calls.push("charge")),
              Effect.fail(new Declined({ card: "4111" }))
            ),
            { success: Schema.String, error: Declined }
          ).pipe(Effect.catchTag("Declined", (declined) => Effect.succeed(`declined ${declined.card}`)))
          yield* gate
          return AgentExecutor.completedText(outcome)
        })
      const first = yield* serve(file, agent(Effect.never))
      const started = yield* send(yield* makeClient(first.server.url), "pay", {}, true)
      yield* eventually(Effect.sync(() => effects.calls.length), (n) => n === 1)
      yield* Effect.sleep("50 millis")
      yield* first.close
      const second = yield* serve(file, agent(Effect.void))
      yield* Effect.addFinalizer(() => second.close)
      const done = yield* eventually(taskOn(second.server.url, started.id), (task) => task.status?.state === 3)
      expect([textOf(done), effects.calls]).toEqual(["declined 4111", ["charge"]])
    }))

  it.scopedLive("a defect in a durable agent ends its task FAILED with an error id, and its run is not resumed", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      const dying: AgentExecutor.Agent = () =>
        Effect.zipRight(
          AgentExecutor.step("one", Effect.sync(() => effects.calls.push("one")), { success: Schema.Number }),
          Effect.dieMessage("card 4111 declined")
        )
      const first = yield* serve(file, dying)
      const task = yield* send(yield* makeClient(first.server.url), "pay")
      expect([task.status?.state, textOf(task)]).toEqual([
        4,
        expect.stringMatching(failedWithId)
      ])
      yield* first.close
      expect(yield* kept(file)).toEqual({ runs: 0, steps: 0 })
      const second = yield* serve(file, dying)
      yield* second.close
      expect(effects.calls).toEqual(["one"])
    }))

  it.scopedLive("a keyed send is resumed too, and a repeat of its key gets its task, never a second run", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const effects: Effects = { calls: [] }
      const first = yield* serve(file, agent(effects, Effect.never), { idempotency: {} })
      const message = keyed("LH400", "order-17")
      const started = yield* sendMessage(yield* makeClient(first.server.url), message, {}, true)
      yield* eventually(Effect.sync(() => effects.calls), (calls) => calls.includes("two"))
      yield* first.close
      const second = yield* serve(file, agent(effects, Effect.void), { idempotency: {} })
      yield* Effect.addFinalizer(() => second.close)
      const done = yield* eventually(taskOn(second.server.url, started.id), (task) => task.status?.state === 3)
      expect(textOf(done)).toBe("seat for LH400, paid")
      const repeat = yield* sendMessage(yield* makeClient(second.server.url), message)
      expect([repeat.id, repeat.status?.state === 4, effects.calls]).toEqual([started.id, false, ["one", "two", "two"]])
    }))

  it.scopedLive("a durable agent on the memory store is refused at start", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        A2AServer.make({
          agent: asking({ calls: [] }),
          card: { name: "memory", description: "no database" },
          port: 0,
          durable: true
        })
      )
      expect(Exit.isFailure(exit) && String(Exit.isFailure(exit) ? exit.cause : "")).toMatch(
        /A durable agent needs A2AServer with a task store on SQLite or PostgreSQL/
      )
    }))
})
