/**
 * The idempotency stage over our request handler, called as an Effect: a
 * keyed run is driven and recorded on a fiber of the server's, so that a
 * caller who leaves, interrupted or done reading, leaves no entry running
 * and no run to be repeated.
 */
import { type Task, TaskState } from "@a2a-js/sdk"
import { AgentEvent, type AgentExecutor, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Fiber, Option, Stream } from "effect"
import * as IdempotencyLedger from "../../../../src/IdempotencyLedger.js"
import * as internalRequestHandler from "../../../../src/internal/server/handler/requestHandler.js"
import * as internalSubscription from "../../../../src/internal/server/handler/subscription.js"
import * as internalIdempotency from "../../../../src/internal/server/idempotency/idempotency.js"
import * as internalStore from "../../../../src/internal/server/store/store.js"
import { cardFor } from "../../../fixtures/peers.js"
import { anonymousContext, eventually, keyed } from "../../../fixtures/serverAgents.js"

/** Publishes the task WORKING, waits for `gate`, then ends it COMPLETED; counts its runs. */
const gated = (gate: Deferred.Deferred<void>, runs: { count: number }): AgentExecutor => ({
  execute: async (request, bus) => {
    runs.count += 1
    const { contextId, taskId } = request
    const status = (state: TaskState) => ({ state, message: undefined, timestamp: new Date().toISOString() })
    bus.publish(AgentEvent.task({
      id: taskId,
      contextId,
      status: status(TaskState.TASK_STATE_WORKING),
      artifacts: [],
      history: [request.userMessage],
      metadata: {}
    }))
    await Effect.runPromise(Deferred.await(gate))
    bus.publish(
      AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: {} })
    )
  },
  cancelTask: () => Promise.resolve()
})

/** The core handler behind the idempotency stage, over a memory store and ledger, for the current scope. */
const keyedHandler = (executor: AgentExecutor) =>
  Effect.gen(function*() {
    const subscriptions = internalSubscription.makeSubscriptions()
    const card = cardFor("")
    const idempotency = yield* internalIdempotency.make({
      card,
      executor: { claim: () => () => {} },
      subscriptions,
      options: {}
    })
    const core = yield* internalRequestHandler.make({
      card,
      extendedCard: undefined,
      executor,
      channels: subscriptions.channels,
      pushStore: undefined,
      ...idempotency.hooks
    })
    return internalIdempotency.keying(core, idempotency)
  }).pipe(
    Effect.provideService(internalStore.TaskStore, internalStore.fromSdk(new InMemoryTaskStore())),
    Effect.provide(IdempotencyLedger.layerMemory({ pollInterval: "10 millis" }))
  )

describe("the idempotency stage", () => {
  it.scopedLive("a blocking caller interrupted while its run goes on: the entry records the run's end, and a repeat gets it without running again", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const runs = { count: 0 }
      const handler = yield* keyedHandler(gated(gate, runs))
      const params = { tenant: "", message: keyed("book", "order-1"), configuration: undefined, metadata: {} }
      const caller = yield* Effect.fork(handler.sendMessage(params, anonymousContext()))
      yield* eventually(Effect.sync(() => runs.count), (count) => count === 1)
      yield* Fiber.interrupt(caller)
      yield* Deferred.succeed(gate, undefined)
      const again = (yield* handler.sendMessage(params, anonymousContext()).pipe(Effect.timeout("5 seconds"))) as Task
      expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(runs.count).toBe(1)
    }))

  it.scopedLive("a streaming caller who stops reading at the first event: the run is read to its end, and a repeat gets that end", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const runs = { count: 0 }
      const handler = yield* keyedHandler(gated(gate, runs))
      const params = { tenant: "", message: keyed("book", "order-2"), configuration: undefined, metadata: {} }
      const first = yield* Stream.runHead(handler.sendMessageStream(params, anonymousContext()))
      expect(first._tag === "Some" && first.value.payload?.$case).toBe("task")
      yield* Deferred.succeed(gate, undefined)
      const again = yield* Stream.runCollect(handler.sendMessageStream(params, anonymousContext())).pipe(
        Effect.timeout("5 seconds")
      )
      // Its end, recorded (a task), or followed if the repeat came first (the task, then its status).
      const last = Chunk.last(again).pipe(Option.getOrUndefined)
      const payload = last?.payload
      expect(payload?.$case === "task" || payload?.$case === "statusUpdate" ? payload.value.status?.state : undefined)
        .toBe(TaskState.TASK_STATE_COMPLETED)
      expect(runs.count).toBe(1)
    }))
})
