/**
 * A subscription waiting for its paused task's next run lets go of it all
 * when its stream is closed or the server shuts down: it ends, and the
 * task's next run has no listener of it.
 */
import { TaskState } from "@a2a-js/sdk"
import {
  type AgentExecutor,
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  type ExecutionEventBus,
  InMemoryTaskStore,
  UnauthenticatedUser
} from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import * as internalHandler from "../../../../src/internal/server/handler/handler.js"
import * as internalSubscription from "../../../../src/internal/server/transport/subscription.js"
import { cardFor } from "../../../fixtures/peers.js"
import { seededTask } from "../../../fixtures/serverAgents.js"

// No message is sent here: nothing runs.
const idle: AgentExecutor = { execute: () => Promise.resolve(), cancelTask: () => Promise.resolve() }

const listenersOf = (bus: ExecutionEventBus): number =>
  [...(bus as unknown as { eventListeners: Map<unknown, Array<unknown>> }).eventListeners.values()]
    .reduce((sum, wrapped) => sum + wrapped.length, 0)

describe("a subscription waiting for its paused task's next run", () => {
  it.each(["closed", "shutdown"] as const)("ends when %s, and leaves no listener for the next run", async (how) => {
    const subscriptions = internalSubscription.makeSubscriptions()
    const store = new InMemoryTaskStore()
    const context = defaultServerCallContextBuilder({
      extensions: undefined,
      user: new UnauthenticatedUser(),
      headers: {}
    })
    const paused = seededTask(crypto.randomUUID(), TaskState.TASK_STATE_INPUT_REQUIRED, new Date().toISOString())
    await store.save(paused, context)
    const handler = internalSubscription.continuing(
      new DefaultRequestHandler(
        cardFor(""),
        store,
        idle,
        ...internalHandler.handlerArguments(subscriptions.manager, undefined, undefined)
      ),
      subscriptions
    )
    subscriptions.subscribing(context)
    const stream = handler.resubscribe({ id: paused.id, tenant: "" }, context)
    expect((await stream.next()).value?.payload?.$case).toBe("task")
    const waiting = stream.next()
    if (how === "closed") subscriptions.close(context)
    else subscriptions.shutdown()
    expect(await waiting).toEqual({ done: true, value: undefined })
    expect(listenersOf(subscriptions.manager.createOrGetByTaskId(paused.id, context))).toBe(0)
  })
})
