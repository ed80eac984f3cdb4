import { type Task, TaskState } from "@a2a-js/sdk"
import { InMemoryTaskStore, type ServerCallContext, type TaskStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { vi } from "vitest"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import { saveWaitLimitOption, type SaveWaitOptions } from "../../../../src/internal/server/run/storeWatch.js"
import * as taskState from "../../../../src/internal/wire/taskState.js"
import { eventually, makeClient, send, stalledStream, textOf, userMessage } from "../../../fixtures/serverAgents.js"

const card = { name: "store-watch-test", description: "The executor's watch of the handler's saves" }

// The executor's wait for a hanging store call, short enough for a test.
const waitLimit = 300

/**
 * A store whose saves take `delay` ms each (a database under load, its task rows growing), and whose save of a task
 * that `fails` picks hangs past the executor's wait, then fails once (a connection that was cut).
 */
const slowStore = (delay: number, fails: (task: Task) => boolean = () => false): TaskStore => {
  const inner = new InMemoryTaskStore()
  let failed = false
  return {
    save: async (task: Task, context: ServerCallContext) => {
      if (!failed && fails(task)) {
        failed = true
        await new Promise((resolve) => setTimeout(resolve, 3 * waitLimit))
        throw new Error("connection terminated")
      }
      await new Promise((resolve) => setTimeout(resolve, delay))
      return inner.save(task, context)
    },
    load: (id: string, context: ServerCallContext) => inner.load(id, context),
    list: (params, context) => inner.list(params, context)
  }
}

/** A server with the executor's wait for a hanging store call cut to {@link waitLimit}. */
const serve = (agent: AgentExecutor.Agent, taskStore: TaskStore) => {
  const options: A2AServer.Options<never, never> & SaveWaitOptions = {
    agent,
    card,
    taskStore,
    [saveWaitLimitOption]: waitLimit
  }
  return A2AServer.make(options)
}

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

describe("storeWatch", () => {
  it.scopedLive.each(
    [
      ["a non-streaming send", false],
      ["a stream", true]
    ] as const
  )(
    "a handler saving a burst of statuses slowly, long past the executor's wait, is waited for: every status is stored (%s)",
    ([, streaming]) =>
      Effect.gen(function*() {
        const ignored = yield* ignoredWarnings
        const count = 150
        // 150 saves of at least 4 ms each: the handler is busy for over 600 ms, twice the executor's wait.
        const server = yield* serve(burst(count), slowStore(4))
        const client = yield* makeClient(server.url)
        const started = performance.now()
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
        // The handler did lag past the wait: the executor would have written ahead of it.
        expect(performance.now() - started).toBeGreaterThan(waitLimit)
        expect(texts(stored)).toEqual(["go", ...Array.from({ length: count }, (_, i) => `step ${i}`), "done"])
        expect(textOf(stored)).toBe("done")
        expect(ignored()).toEqual([])
      })
  )

  it.scopedLive("a handler whose save hangs past the wait and then fails: the executor writes the run's own ending", () =>
    Effect.gen(function*() {
      const server = yield* serve(burst(20), slowStore(1, (task) => textOf(task) === "step 10"))
      const client = yield* makeClient(server.url)
      const started = performance.now()
      const task = yield* send(client, "go", {}, true)
      const stored = yield* eventually(
        Effect.promise(() => client.getTask({ tenant: "", id: task.id, historyLength: undefined })),
        (task) => taskState.isTerminal(task.status?.state),
        500
      )
      expect(performance.now() - started).toBeGreaterThanOrEqual(3 * waitLimit)
      // Not the FAILED the SDK writes when its save fails: the executor's final state, queued behind the hung save
      // once the wait was up, went in first.
      expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(stored)).toBe("done")
      // With every status: those the handler saved before its save failed, and the rest, which it never saved.
      expect(texts(stored)).toEqual(["go", ...Array.from({ length: 20 }, (_, i) => `step ${i}`), "done"])
    }))

  it.scopedLive("a stream reader that stalls past the run's end, then reads on: the final state written ahead keeps every status", () =>
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
      // The run ends while the handler is stalled: the executor writes the final state itself, with the statuses
      // the handler had not saved.
      const expected = ["go", ...Array.from({ length: count }, (_, i) => `step ${i}`), "done"]
      const steps = (task: Task) => texts(task).map((text) => text.split(" ").slice(0, 2).join(" "))
      const ahead = yield* eventually(getTask, (task) => task.status?.state === TaskState.TASK_STATE_COMPLETED, 500)
      expect(steps(ahead)).toEqual(expected)
      // The reader reads on: the handler processes the rest of the run's events, late, and drops them (the
      // stored task is terminal), up to the final one, which it saves again.
      socket.resume()
      yield* eventually(server.executor.running, (running) => running === 0, 500)
      yield* Effect.sleep("300 millis")
      const stored = yield* getTask
      expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(steps(stored)).toEqual(expected)
      expect(textOf(stored)).toBe("done")
    }))
})
