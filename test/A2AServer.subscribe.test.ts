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
import { Deferred, Effect, Exit, Scope } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Part from "../src/Part.js"
import { callerOn, taskOf, transports } from "./fixtures/callers.js"
import {
  answeredWhileSubscribed,
  answerShapes,
  canceledWhileSubscribed,
  collect,
  pausesByTransport,
  pausingAgent,
  shapeOf,
  stillOpen
} from "./fixtures/pausingAgent.js"
import { eventually } from "./fixtures/serverAgents.js"

const serve = A2AServer.make({
  agent: pausingAgent,
  card: { name: "pausing", description: "pauses for input or sign-in" },
  shutdownTimeout: "1 second"
})

describe("SubscribeToTask through a pause", () => {
  it.each(pausesByTransport)(
    "%s, paused by %j: every subscriber gets the answer's run, then its stream ends with the task",
    (transport, text, state) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const caller = yield* callerOn((yield* serve).url, transport, undefined)
        yield* answeredWhileSubscribed(caller, [caller, caller], caller, text, state)
      })))
  )

  it.each(transports)(
    "%s: a subscriber of a paused task gets its cancel, then its stream ends",
    (transport) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const caller = yield* callerOn((yield* serve).url, transport, undefined)
        yield* canceledWhileSubscribed(caller, caller, caller)
      })))
  )

  it.scopedLive("a subscriber of a running task that then pauses stays open, and gets the answer's run to its end", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const thinking: AgentExecutor.Agent<never> = (request) =>
        Part.textOf(request.message.parts) === "think"
          ? Effect.as(Deferred.await(gate), AgentExecutor.InputRequired({ question: "Which account?" }))
          : pausingAgent(request)
      const server = yield* A2AServer.make({
        agent: thinking,
        card: { name: "thinking", description: "thinks, then asks" }
      })
      const caller = yield* callerOn(server.url, "JSONRPC", undefined)
      const running = taskOf(yield* caller.sendWith("think", { returnImmediately: true }))
      const subscription = caller.client.resubscribeTask({ id: running.id, tenant: "" }, caller.options)
      const head = yield* Effect.promise(() => subscription.next())
      expect(head.done !== true && shapeOf(head.value)).toBe("task TASK_STATE_WORKING")
      const rest = collect(subscription)
      yield* Deferred.succeed(gate, undefined)
      yield* eventually(
        Effect.map(caller.get(running.id), (got) => taskOf(got).status?.state),
        (state) => state === TaskState.TASK_STATE_INPUT_REQUIRED
      )
      expect(yield* Effect.promise(() => stillOpen(rest))).toBe("open")
      taskOf(yield* caller.send("account 7", running.id))
      expect((yield* Effect.promise(() => rest)).map(shapeOf)).toEqual([
        "status TASK_STATE_INPUT_REQUIRED Which account?",
        ...answerShapes("account 7")
      ])
    }))

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
