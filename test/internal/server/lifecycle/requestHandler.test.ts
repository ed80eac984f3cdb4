/**
 * What the request handler guarantees of a run's end, with no watch of the
 * store: the final state is in the store once a send returns or a stream
 * ends, a shutdown loses none, and a burst of events costs few writes.
 */
import { type Task, TaskState } from "@a2a-js/sdk"
import { InMemoryTaskStore, ServerCallContext, type TaskStore, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import { makeClient, send, userMessage } from "../../../fixtures/serverAgents.js"

const card = { name: "handler-test", description: "the request handler's guarantees" }
const anonymous = new ServerCallContext({ user: new UnauthenticatedUser() })

/** An in-memory store whose calls take `delay` ms, its saves counted. */
const slowStore = (delay: number) => {
  const memory = new InMemoryTaskStore()
  const counts = { saves: 0 }
  const later = <A>(call: () => Promise<A>) => new Promise((resolve) => setTimeout(resolve, delay)).then(call)
  const store: TaskStore = {
    save: (task, context) => {
      counts.saves++
      return later(() => memory.save(task, context))
    },
    load: (taskId, context) => later(() => memory.load(taskId, context)),
    list: (params, context) => memory.list(params, context)
  }
  return { store, memory, counts }
}

const steps = (count: number): AgentExecutor.Agent => () =>
  Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => AgentExecutor.status(`step ${i}`), {
    discard: true
  }).pipe(Effect.as(AgentExecutor.completedText("done")))

const progress = (task: Task | undefined) =>
  (task?.history ?? []).filter((message) => JSON.stringify(message).includes("step ")).length

describe("the request handler", () => {
  it.scopedLive("once a send returns, the store holds what it answered: the final state and every status", () =>
    Effect.gen(function*() {
      const { memory, store } = slowStore(3)
      const server = yield* A2AServer.make({ agent: steps(40), card, taskStore: store })
      const client = yield* makeClient(server.url)
      const answer = yield* send(client, "go")
      // Read from the store itself, at once: nothing is written after the answer.
      const stored = yield* Effect.promise(() => memory.load(answer.id, anonymous))
      expect([answer.status?.state, progress(answer)]).toEqual([TaskState.TASK_STATE_COMPLETED, 40])
      expect([stored?.status?.state, progress(stored)]).toEqual([TaskState.TASK_STATE_COMPLETED, 40])
    }))

  it.scopedLive("once a stream ends, the store holds its last event", () =>
    Effect.gen(function*() {
      const { memory, store } = slowStore(3)
      const server = yield* A2AServer.make({ agent: steps(20), card, taskStore: store })
      const client = yield* makeClient(server.url)
      const states: Array<TaskState | undefined> = []
      let taskId = ""
      yield* Effect.promise(async () => {
        const stream = client.sendMessageStream({
          tenant: "",
          message: userMessage("go"),
          configuration: undefined,
          metadata: {}
        })
        for await (const event of stream) {
          const payload = event.payload
          if (payload?.$case === "task") taskId = payload.value.id
          if (payload?.$case === "statusUpdate") states.push(payload.value.status?.state)
        }
      })
      const stored = yield* Effect.promise(() => memory.load(taskId, anonymous))
      expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED)
      expect([stored?.status?.state, progress(stored)]).toEqual([TaskState.TASK_STATE_COMPLETED, 20])
    }))

  it.live("a shutdown loses no final state: a run that ends within the deadline is in the store once it returns", () =>
    Effect.gen(function*() {
      const { memory, store } = slowStore(20)
      const scope = yield* Scope.make()
      const agent: AgentExecutor.Agent = () =>
        Effect.as(Effect.sleep("150 millis"), AgentExecutor.completedText("finished during the shutdown"))
      const server = yield* A2AServer.make({ agent, card, taskStore: store, shutdownTimeout: "3 seconds" }).pipe(
        Scope.extend(scope)
      )
      const client = yield* makeClient(server.url)
      const started = yield* send(client, "go", {}, true)
      yield* Scope.close(scope, Exit.void)
      const stored = yield* Effect.promise(() => memory.load(started.id, anonymous))
      expect(stored?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    }))

  it.scopedLive("a burst of 2,000 statuses on a slow store is written in few saves, every status kept", () =>
    Effect.gen(function*() {
      const { counts, memory, store } = slowStore(5)
      const server = yield* A2AServer.make({ agent: steps(2000), card, taskStore: store })
      const client = yield* makeClient(server.url)
      const answer = yield* send(client, "go")
      const stored = yield* Effect.promise(() => memory.load(answer.id, anonymous))
      expect([stored?.status?.state, progress(stored)]).toEqual([TaskState.TASK_STATE_COMPLETED, 2000])
      // One save per batch that queued while the one before was written, not one per event.
      expect(counts.saves).toBeLessThan(50)
    }))
})
