/**
 * The refusals as a stage of the Effect request handler: the hold a message
 * takes on the task it continues is let go once, however its call ends,
 * interrupted included (which the SDK's promise shape could not reach), and
 * a second message meanwhile is refused as the transports answer it.
 */
import { type SendMessageRequest, TaskState } from "@a2a-js/sdk"
import { TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import { AgentEvent, type AgentExecutor, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import * as internalChannel from "../../../../src/internal/server/handler/channel.js"
import * as internalRequestHandler from "../../../../src/internal/server/handler/requestHandler.js"
import * as internalStages from "../../../../src/internal/server/handler/stages.js"
import * as internalStore from "../../../../src/internal/server/store/store.js"
import { cardFor } from "../../../fixtures/peers.js"
import { anonymousContext, pausedIn, userMessage } from "../../../fixtures/serverAgents.js"

// Each run says it works, then never ends: a blocking send waits, a stream stays open.
const endless: AgentExecutor = {
  execute: (requestContext, bus) => {
    bus.publish(AgentEvent.task({
      ...requestContext.task!,
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }
    }))
    return new Promise<void>(() => {})
  },
  cancelTask: () => Promise.resolve()
}

const setup = (visible?: boolean) =>
  Effect.gen(function*() {
    const store = new InMemoryTaskStore()
    const context = anonymousContext()
    const paused = yield* pausedIn(store, context)
    const core = yield* internalRequestHandler.make({
      card: cardFor(""),
      extendedCard: undefined,
      executor: endless,
      channels: internalChannel.makeChannels(),
      pushStore: undefined
    }).pipe(Effect.provideService(internalStore.TaskStore, internalStore.fromSdk(store)))
    // One hold per task, its releases counted.
    const held = new Set<string>()
    const releases = { count: 0 }
    const handler = internalStages.refusing(core, {
      claim: (taskId) => {
        if (held.has(taskId)) return undefined
        held.add(taskId)
        return () => {
          releases.count++
          held.delete(taskId)
        }
      },
      visible: visible === undefined ? undefined : () => Effect.succeed(visible)
    })
    const message: SendMessageRequest = {
      tenant: "",
      message: userMessage("again", { taskId: paused.id, contextId: paused.contextId }),
      configuration: undefined,
      metadata: undefined
    }
    return { handler, context, message, held, releases, taskId: paused.id }
  })

describe("refusing: the hold of a message on the task it continues", () => {
  it.live("a blocking send interrupted lets go of its hold once; meanwhile another message is refused", () =>
    Effect.gen(function*() {
      const { context, handler, held, message, releases, taskId } = yield* setup()
      const sending = yield* Effect.fork(handler.sendMessage(message, context))
      yield* Effect.sleep("50 millis")
      expect(held.has(taskId)).toBe(true)
      const refused = yield* Effect.flip(handler.sendMessage(message, context))
      expect(refused).toBeInstanceOf(UnsupportedOperationError)
      expect(refused.message).toMatch(/still running/)
      yield* Fiber.interrupt(sending)
      expect(releases.count).toBe(1)
      expect(held.has(taskId)).toBe(false)
    }))

  it.live("a stream whose reader leaves after its first event lets go of its hold once", () =>
    Effect.gen(function*() {
      const { context, handler, held, message, releases, taskId } = yield* setup()
      const first = yield* handler.sendMessageStream(message, context).pipe(
        Stream.take(1),
        Stream.runCollect,
        Effect.timeout("5 seconds")
      )
      expect(first.length).toBe(1)
      expect(releases.count).toBe(1)
      expect(held.has(taskId)).toBe(false)
    }))

  it.live("to a caller who may not see the task, a message while it is held is TaskNotFound", () =>
    Effect.gen(function*() {
      const { context, handler, message, releases } = yield* setup(false)
      const sending = yield* Effect.fork(handler.sendMessage(message, context))
      yield* Effect.sleep("50 millis")
      const refused = yield* Effect.flip(Stream.runCollect(handler.sendMessageStream(message, context)))
      expect(refused).toBeInstanceOf(TaskNotFoundError)
      // The refused call took no hold: only the first lets go, once.
      yield* Fiber.interrupt(sending)
      expect(releases.count).toBe(1)
    }))
})
