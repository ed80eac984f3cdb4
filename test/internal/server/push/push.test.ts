import { type SendMessageRequest, TaskState } from "@a2a-js/sdk"
import { type AgentExecutor as SdkAgentExecutor, ServerCallContext } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as internalAuthentication from "../../../../src/internal/server/caller/authentication.js"
import * as internalChannel from "../../../../src/internal/server/handler/channel.js"
import * as internalRequestHandler from "../../../../src/internal/server/handler/requestHandler.js"
import * as internalPush from "../../../../src/internal/server/push/push.js"
import * as memoryStore from "../../../../src/internal/server/store/memoryStore.js"
import * as internalStore from "../../../../src/internal/server/store/store.js"
import { cardFor } from "../../../fixtures/peers.js"
import { eventually, seededTask, userMessage } from "../../../fixtures/serverAgents.js"
import { webhook } from "../../../fixtures/webhook.js"

/**
 * Our request handler over `executor`, its runs through push's run stage and its tasks in `store`; a new task of a
 * call takes the id `taskIdFor` gives it.
 */
const pushingHandler = (
  push: internalPush.Push,
  executor: SdkAgentExecutor,
  store: internalStore.TaskStore,
  taskIdFor?: (context: ServerCallContext) => string | undefined
) =>
  internalRequestHandler.make({
    card: {
      ...cardFor("http://127.0.0.1/unused"),
      capabilities: { streaming: true, pushNotifications: true, extensions: [] },
      supportedInterfaces: []
    },
    extendedCard: undefined,
    executor,
    channels: internalChannel.makeChannels(),
    pushStore: push.store,
    runStages: [push.pushing],
    taskIdFor
  }).pipe(Effect.provideService(internalStore.TaskStore, store))

const sendOf = (text: string): SendMessageRequest => ({
  tenant: "",
  message: userMessage(text),
  configuration: undefined,
  metadata: undefined
})

describe("server/push", () => {
  it.scopedLive("the configs of a task the bounded memory store forgets go with it, in the scope of its caller only", () =>
    Effect.gen(function*() {
      let now = 0
      const native = memoryStore.make({ retention: "1 second", now: () => now })
      const tasks = internalStore.toSdk(native, yield* Effect.runtime<never>())
      const push = yield* internalPush.make(
        { allowPushTargets: ["127.0.0.1"] },
        undefined,
        "push-test",
        native.whenForgotten
      )
      const as = (owner: string) => internalAuthentication.ownerContext("", owner)
      const config = (id: string, taskId: string) => ({
        tenant: "",
        id,
        taskId,
        url: "http://127.0.0.1:9/hook",
        token: "t",
        authentication: undefined
      })
      const ended = seededTask("task-1", TaskState.TASK_STATE_COMPLETED, new Date(0).toISOString())
      yield* Effect.promise(() => tasks.save(ended, as("a")))
      yield* Effect.promise(() => push.store.save("task-1", as("a"), config("c1", "task-1")))
      yield* Effect.promise(() => push.store.save("task-1", as("a"), config("c2", "task-1")))
      // Another caller's config of a task of the same id, which the store keeps for that caller.
      yield* Effect.promise(() => tasks.save(ended, as("b")))
      yield* Effect.promise(() => push.store.save("task-1", as("b"), config("c3", "task-1")))
      const configs = (owner: string) => Effect.promise(() => push.store.load("task-1", as(owner)))
      expect((yield* configs("a")).map((c) => c.id)).toEqual(["c1", "c2"])

      // Retention passes for a's task only: b's was saved again since.
      now = 600
      yield* Effect.promise(() => tasks.save(ended, as("b")))
      now = 1_200
      expect(yield* Effect.promise(() => tasks.load("task-1", as("a")))).toBeUndefined()
      yield* eventually(configs("a"), (left) => left.length === 0)
      expect((yield* configs("b")).map((c) => c.id)).toEqual(["c3"])
    }))

  it.scopedLive("a config sent with a message whose run answers with a bare message goes: no task will ever hold it", () =>
    Effect.gen(function*() {
      const push = yield* internalPush.make(
        { allowPushTargets: ["127.0.0.1"] },
        undefined,
        "push-test",
        undefined
      )
      const executor = yield* AgentExecutor.make(
        (request) =>
          Effect.succeed(
            request.message.messageId.startsWith("ping")
              ? AgentExecutor.messageText("pong")
              : AgentExecutor.completedText("done")
          ),
        { messageReplies: true }
      )
      const caller = internalAuthentication.ownerContext("", "a")
      let nextTaskId = ""
      const handler = yield* pushingHandler(
        push,
        executor,
        memoryStore.make({ now: () => Date.now() }),
        () => nextTaskId
      )
      /** Sends a message with a push config, which the handler saves under the run's task id before the run. */
      const sendWithConfig = (messageId: string) =>
        Effect.gen(function*() {
          const taskId = crypto.randomUUID()
          nextTaskId = taskId
          const config = {
            tenant: "",
            id: "c1",
            taskId,
            url: "http://127.0.0.1:9/hook",
            token: "t",
            authentication: undefined
          }
          const configuration = {
            acceptedOutputModes: [],
            taskPushNotificationConfig: config,
            returnImmediately: false
          }
          yield* handler.sendMessage(
            { tenant: "", message: userMessage("hi", { messageId }), configuration, metadata: undefined },
            caller
          )
          return Effect.promise(() => push.store.load(taskId, caller))
        })
      const answered = yield* sendWithConfig("ping-1")
      yield* eventually(answered, (left) => left.length === 0)
      // A task's config stays for its task.
      const tasked = yield* sendWithConfig("book-1")
      yield* Effect.sleep("100 millis")
      expect((yield* tasked).map((c) => c.id)).toEqual(["c1"])
    }))

  it.scopedLive("without configs, a run's events and the tasks the bounded store forgets never reach the push store; with one, the task is pushed", () =>
    Effect.gen(function*() {
      const hook = yield* webhook()
      const native = memoryStore.make({ maxFinished: 1, now: () => Date.now() })
      const tasks = internalStore.toSdk(native, yield* Effect.runtime<never>())
      const push = yield* internalPush.make(
        { allowPushTargets: ["127.0.0.1"] },
        undefined,
        "push-test",
        native.whenForgotten
      )
      // The real store, its lookups and deletes counted in place: the sender and the eviction reach it through this
      // same object.
      const store: { -readonly [K in keyof typeof push.store]: (typeof push.store)[K] } = push.store
      const calls = { load: 0, loadWithMetadata: 0, delete: 0 }
      const { delete: remove, load, loadWithMetadata } = store
      store.load = (taskId, context) => (calls.load++, load(taskId, context))
      store.loadWithMetadata = (taskId, context) => (calls.loadWithMetadata++, loadWithMetadata!(taskId, context))
      store.delete = (taskId, context, configId) => (calls.delete++, remove(taskId, context, configId))
      const executor = yield* AgentExecutor.make(() => Effect.succeed(AgentExecutor.completedText("done")))
      let nextTaskId = ""
      const handler = yield* pushingHandler(push, executor, native, () => nextTaskId)
      // Over v1.0, whose pushes are made of the event alone.
      const caller = new ServerCallContext({ user: { isAuthenticated: true, userName: "a" }, requestedVersion: "1.0" })
      const run = (taskId: string) =>
        Effect.suspend(() => {
          nextTaskId = taskId
          return handler.sendMessage(sendOf("hi"), caller)
        })
      const ended = (taskId: string) =>
        Effect.promise(() =>
          tasks.save(seededTask(taskId, TaskState.TASK_STATE_COMPLETED, new Date().toISOString()), caller)
        )

      // Ten runs, and ten ended tasks of which the store keeps one: nine forgotten.
      for (let i = 0; i < 10; i++) {
        const taskId = `plain-${i}`
        yield* run(taskId)
        yield* ended(taskId)
      }
      expect(yield* Effect.promise(() => tasks.load("plain-0", caller))).toBeUndefined()
      yield* Effect.sleep("100 millis")
      expect(calls).toEqual({ load: 0, loadWithMetadata: 0, delete: 0 })
      expect(hook.received).toEqual([])

      // A task with a config: its events are looked up and pushed, and its config goes when the store forgets it.
      yield* Effect.promise(() =>
        push.store.save("pushed", caller, {
          tenant: "",
          id: "c1",
          taskId: "pushed",
          url: hook.url,
          token: "t",
          authentication: undefined
        })
      )
      yield* run("pushed")
      yield* eventually(
        Effect.sync(() => hook.received),
        (received) => received.some((r) => r.body.includes("TASK_STATE_COMPLETED"))
      )
      expect(hook.received.every((r) => r.body.includes("pushed"))).toBe(true)
      expect(calls.loadWithMetadata).toBeGreaterThan(0)
      yield* ended("pushed")
      yield* ended("after")
      expect(push.store.mayHaveConfigs("pushed")).toBe(false)
      expect(yield* Effect.promise(() => push.store.load("pushed", caller))).toEqual([])
    }))
})
