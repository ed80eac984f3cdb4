/**
 * `SubscribeToTask` through a pause (spec §3.1.6: the stream ends when the
 * task reaches a terminal state): a subscription to a task waiting for input
 * or authentication stays open, every subscriber gets the events of the run
 * the answering message starts, and the stream ends with the task. A cancel
 * of the paused task ends it too, and so does a shutdown. The callers are the
 * SDK's raw clients, on every transport.
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import { callerOn, reasonOf, taskOf, transports } from "./fixtures/callers.js"
import { answerShapes, collect, pausingAgent, pauses, shapeOf, stillOpen } from "./fixtures/pausingAgent.js"

const serve = A2AServer.make({
  agent: pausingAgent,
  card: { name: "pausing", description: "pauses for input or sign-in" },
  shutdownTimeout: "1 second"
})

const cases = transports.flatMap((transport) => pauses.map(([text, state]) => [transport, text, state] as const))

describe("SubscribeToTask through a pause", () => {
  it.each(cases)("%s, paused by %j: every subscriber gets the answer's run, then its stream ends with the task", (transport, text, state) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const server = yield* serve
      const caller = yield* callerOn(server.url, transport, undefined)
      const paused = taskOf(yield* caller.send(text))
      expect(paused.status?.state).toBe(state)
      const subscriptions = [1, 2].map(() => caller.client.resubscribeTask({ id: paused.id, tenant: "" }, caller.options))
      const heads = yield* Effect.promise(() => Promise.all(subscriptions.map((subscription) => subscription.next())))
      expect(heads.map((head) => head.done !== true && shapeOf(head.value))).toEqual([`task ${TaskState[state]}`, `task ${TaskState[state]}`])
      const rests = subscriptions.map((subscription) => collect(subscription))
      expect(yield* Effect.promise(() => stillOpen(rests[0]!))).toBe("open")
      const answered = taskOf(yield* caller.send("account 7", paused.id))
      expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const seen = yield* Effect.promise(() => Promise.all(rests))
      for (const events of seen) expect(events.map(shapeOf)).toEqual(answerShapes("account 7"))
      // Ended: a new subscription is refused, as to any ended task.
      expect(reasonOf(yield* caller.subscribe(paused.id))).toBe("UNSUPPORTED_OPERATION")
    }))))

  it.each(transports)("%s: a subscriber of a paused task gets its cancel, then its stream ends", (transport) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const server = yield* serve
      const caller = yield* callerOn(server.url, transport, undefined)
      const paused = taskOf(yield* caller.send("ask"))
      const subscription = caller.client.resubscribeTask({ id: paused.id, tenant: "" }, caller.options)
      yield* Effect.promise(() => subscription.next())
      const rest = collect(subscription)
      expect(yield* Effect.promise(() => stillOpen(rest))).toBe("open")
      expect(taskOf(yield* caller.cancel(paused.id)).status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect((yield* Effect.promise(() => rest)).map(shapeOf)).toEqual(["status TASK_STATE_CANCELED Task cancellation requested by user."])
    }))))

  it.live("a subscriber of a paused task that is never answered: its stream stays open, and the shutdown ends it cleanly", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(serve, scope)
      const caller = yield* callerOn(server.url, "JSONRPC", undefined)
      const paused = taskOf(yield* caller.send("ask"))
      const subscription = caller.client.resubscribeTask({ id: paused.id, tenant: "" }, caller.options)
      yield* Effect.promise(() => subscription.next())
      const rest = collect(subscription)
      expect(yield* Effect.promise(() => stillOpen(rest))).toBe("open")
      yield* Scope.close(scope, Exit.void)
      // An end, not a connection cut: the stream had nothing more to say.
      expect(yield* Effect.promise(() => rest)).toEqual([])
    }))
})
