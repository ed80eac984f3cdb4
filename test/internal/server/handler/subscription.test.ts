/**
 * A subscription waiting for its paused task's next run lets go of it all
 * when its stream is closed or the server shuts down: it ends, and the
 * task's next run has no listener of it.
 */
import { type AgentExecutor, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Runtime } from "effect"
import type * as internalChannel from "../../../../src/internal/server/handler/channel.js"
import * as internalRequestHandler from "../../../../src/internal/server/handler/requestHandler.js"
import * as internalSdkHandler from "../../../../src/internal/server/handler/sdkHandler.js"
import * as internalSubscription from "../../../../src/internal/server/handler/subscription.js"
import * as internalStore from "../../../../src/internal/server/store/store.js"
import { cardFor } from "../../../fixtures/peers.js"
import { anonymousContext, pausedIn } from "../../../fixtures/serverAgents.js"

// No message is sent here: nothing runs.
const idle: AgentExecutor = { execute: () => Promise.resolve(), cancelTask: () => Promise.resolve() }

const listenersOf = (channel: internalChannel.Channel): number => {
  const held = channel as unknown as { listeners: Set<unknown>; onceListeners: Set<unknown>; followers: Set<unknown> }
  return held.listeners.size + held.onceListeners.size + held.followers.size
}

describe("a subscription waiting for its paused task's next run", () => {
  it.each(["closed", "shutdown"] as const)("ends when %s, and leaves no listener for the next run", async (how) => {
    const subscriptions = internalSubscription.makeSubscriptions()
    const store = new InMemoryTaskStore()
    const context = anonymousContext()
    const paused = await Effect.runPromise(pausedIn(store, context))
    const requestHandler = Effect.runSync(
      internalRequestHandler.make({
        card: cardFor(""),
        extendedCard: undefined,
        executor: idle,
        channels: subscriptions.channels,
        pushStore: undefined
      }).pipe(Effect.provideService(internalStore.TaskStore, internalStore.fromSdk(store)))
    )
    const handler = internalSdkHandler.toSdk(
      internalSubscription.continuing(requestHandler, subscriptions),
      Runtime.defaultRuntime
    )
    subscriptions.subscribing(context)
    const stream = handler.resubscribe({ id: paused.id, tenant: "" }, context)
    expect((await stream.next()).value?.payload?.$case).toBe("task")
    const waiting = stream.next()
    if (how === "closed") subscriptions.close(context)
    else subscriptions.shutdown()
    expect(await waiting).toEqual({ done: true, value: undefined })
    const next = subscriptions.channels.open(paused.id, context, () => Promise.resolve(undefined), {
      retryMillis: 0,
      gaveUp: () => {}
    })
    expect(next.opened).toBe(true)
    expect(listenersOf(next.channel)).toBe(0)
  })
})
