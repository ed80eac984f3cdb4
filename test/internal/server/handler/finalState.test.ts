import { type Task, TaskState } from "@a2a-js/sdk"
import { InMemoryTaskStore, type ServerCallContext, type TaskStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { vi } from "vitest"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as taskState from "../../../../src/internal/wire/taskState.js"
import { eventually, makeClient, send, stalledStream, textOf, userMessage } from "../../../fixtures/serverAgents.js"

/**
 * A run's final state on a store that lags or fails, as the request handler
 * appends it, the one place that writes it: every status
 * kept, in order, and the run's own end, never a state written ahead of the
 * events before it.
 */
const card = { name: "final-state-test", description: "A run's end, as the handler appends it" }

// How long the save that fails hangs first: longer than the handler's first retry.
const hangMillis = 900

/**
 * A store whose saves take `delay` ms each (a database under load, its task rows growing), and whose save of a task
 * that `fails` picks hangs past the handler's first retry, then fails once (a connection that was cut).
 */
const slowStore = (delay: number, fails: (task: Task) => boolean = () => false): TaskStore => {
  const inner = new InMemoryTaskStore()
  let failed = false
  return {
    save: async (task: Task, context: ServerCallContext) => {
      if (!failed && fails(task)) {
        failed = true
        await new Promise((resolve) => setTimeout(resolve, hangMillis))
        throw new Error("connection terminated")
      }
      await new Promise((resolve) => setTimeout(resolve, delay))
      return inner.save(task, context)
    },
    load: (id: string, context: ServerCallContext) => inner.load(id, context),
    list: (params, context) => inner.list(params, context)
  }
}

const serve = (agent: AgentExecutor.Agent, taskStore: TaskStore) => A2AServer.make({ agent, card, taskStore })

/** Publishes `count` statuses in one burst, then completes. */
const burst = (count: number): AgentExecutor.Agent => () =>
  Effect.gen(function*() {
    for (let i = 0; i < count; i++) yield* AgentExecutor.status(`step ${i}`)
    return AgentExecutor.completedText("done")
  })

const texts = (task: Task): Array<string> =>
  (task.history ?? []).map((message) =>
    message.parts.flatMap((part) => part.content?.$case === "text" ? [part.content.value] : []).join("")
  )

// The SDK's ResultManager says so when it drops a status because the stored task is terminal already.
const ignoredWarnings = Effect.acquireRelease(
  Effect.sync(() => {
    const warnings: Array<string> = []
    const spy = vi.spyOn(console, "warn").mockImplementation((...args: Array<unknown>) => {
      warnings.push(args.map(String).join(" "))
    })
    return { warnings, spy }
  }),
  ({ spy }) => Effect.sync(() => spy.mockRestore())
).pipe(Effect.map(({ warnings }) => () => warnings.filter((line) => line.includes("ignoring status update"))))

describe("a run's final state", () => {
  it.scopedLive.each(
    [
      ["a non-streaming send", false],
      ["a stream", true]
    ] as const
  )(
    "a burst of statuses on a slow store: every status is stored, in order, the end last (%s)",
    ([, streaming]) =>
      Effect.gen(function*() {
        const ignored = yield* ignoredWarnings
        const count = 150
        // Each save takes 4 ms: the statuses queue behind it, and go in together.
        const server = yield* serve(burst(count), slowStore(4))
        const client = yield* makeClient(server.url)
        const taskId = streaming
          ? yield* Effect.promise(async () => {
            let id = ""
            const stream = client.sendMessageStream({
              tenant: "",
              message: userMessage("go"),
              configuration: undefined,
              metadata: {}
            })
            for await (const event of stream) {
              if (event.payload?.$case === "task") id = event.payload.value.id
            }
            return id
          })
          : (yield* send(client, "go", {}, true)).id
        const stored = yield* eventually(
          Effect.promise(() => client.getTask({ tenant: "", id: taskId, historyLength: undefined })),
          (task) => task.status?.state === TaskState.TASK_STATE_COMPLETED,
          1000
        )
        expect(texts(stored)).toEqual(["go", ...Array.from({ length: count }, (_, i) => `step ${i}`), "done"])
        expect(textOf(stored)).toBe("done")
        expect(ignored()).toEqual([])
      })
  )

  it.scopedLive("a save that hangs and then fails: the events are appended again, the run's own ending last", () =>
    Effect.gen(function*() {
      const server = yield* serve(burst(20), slowStore(1, (task) => textOf(task) === "step 10"))
      const client = yield* makeClient(server.url)
      const task = yield* send(client, "go", {}, true)
      const stored = yield* eventually(
        Effect.promise(() => client.getTask({ tenant: "", id: task.id, historyLength: undefined })),
        (task) => taskState.isTerminal(task.status?.state),
        500
      )
      // Not a FAILED for the refused save: the run's own end, retried with the events that queued meanwhile.
      expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(stored)).toBe("done")
      // With every status: those saved before the save failed, and the rest, appended with the retry.
      expect(texts(stored)).toEqual(["go", ...Array.from({ length: 20 }, (_, i) => `step ${i}`), "done"])
    }))

  it.scopedLive("a stream reader that stalls past the run's end, then reads on: the store has every status, and keeps them", () =>
    Effect.gen(function*() {
      const count = 300
      const big = "x".repeat(24 * 1024)
      const agent: AgentExecutor.Agent = () =>
        Effect.gen(function*() {
          for (let i = 0; i < count; i++) yield* AgentExecutor.status(`step ${i} ${big}`)
          return AgentExecutor.completedText("done")
        })
      const server = yield* A2AServer.make({ agent, card })
      const client = yield* makeClient(server.url)
      const { socket, taskId } = yield* stalledStream(server.address.port, "go")
      const getTask = Effect.promise(() => client.getTask({ tenant: "", id: taskId, historyLength: undefined }))
      // The run ends while its reader is stalled: its events are in the store all the same.
      const expected = ["go", ...Array.from({ length: count }, (_, i) => `step ${i}`), "done"]
      const steps = (task: Task) => texts(task).map((text) => text.split(" ").slice(0, 2).join(" "))
      const ahead = yield* eventually(getTask, (task) => task.status?.state === TaskState.TASK_STATE_COMPLETED, 500)
      expect(steps(ahead)).toEqual(expected)
      // The reader reads on: what it reads late changes nothing of the store.
      socket.resume()
      yield* eventually(server.executor.running, (running) => running === 0, 500)
      yield* Effect.sleep("300 millis")
      const stored = yield* getTask
      expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(steps(stored)).toEqual(expected)
      expect(textOf(stored)).toBe("done")
    }))
})
