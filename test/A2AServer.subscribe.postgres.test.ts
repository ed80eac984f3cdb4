/**
 * `SubscribeToTask` through a pause on two replicas sharing PostgreSQL
 * (tasks and event log): subscribers on both replicas stay open while the
 * task waits for input or authentication, get the events of the run the
 * answer starts on either replica, and end with the task; a cancel of the
 * paused task on one replica ends the subscription on the other. The
 * callers are the SDK's raw clients, on every transport.
 */
import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import { callerOn, reasonOf, taskOf, transports } from "./fixtures/callers.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import { answerShapes, collect, pausingAgent, pauses, shapeOf, stillOpen } from "./fixtures/pausingAgent.js"

/** Replicas `a` and `b` of the pausing agent on the test's PostgreSQL. */
const replicas = Effect.suspend(() => {
  const url = databaseUrl()
  const serve = (name: string) =>
    A2AServer.make({
      agent: pausingAgent,
      card: { name, description: "a replica" },
      taskStore: A2AServer.TaskStoreConfig.Postgres({ url }),
      replication: { url, pollInterval: "200 millis" },
      shutdownTimeout: "1 second"
    })
  return Effect.all({ a: serve("a"), b: serve("b") })
})

const cases = transports.flatMap((transport) => pauses.map(([text, state]) => [transport, text, state] as const))

describe("SubscribeToTask through a pause, on replicas", () => {
  it.each(cases)("%s, paused by %j on A: subscribers on A and B get the answer's run on B, then their streams end", (transport, text, state) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const { a, b } = yield* replicas
      const onA = yield* callerOn(a.url, transport, undefined)
      const onB = yield* callerOn(b.url, transport, undefined)
      const paused = taskOf(yield* onA.send(text))
      expect(paused.status?.state).toBe(state)
      const subscriptions = [onA, onB].map((caller) => caller.client.resubscribeTask({ id: paused.id, tenant: "" }, caller.options))
      const heads = yield* Effect.promise(() => Promise.all(subscriptions.map((subscription) => subscription.next())))
      expect(heads.map((head) => head.done !== true && shapeOf(head.value))).toEqual([`task ${TaskState[state]}`, `task ${TaskState[state]}`])
      const rests = subscriptions.map((subscription) => collect(subscription))
      expect(yield* Effect.promise(() => stillOpen(rests[1]!))).toBe("open")
      const answered = taskOf(yield* onB.send("account 7", paused.id))
      expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const seen = yield* Effect.promise(() => Promise.all(rests))
      for (const events of seen) expect(events.map(shapeOf)).toEqual(answerShapes("account 7"))
      expect(reasonOf(yield* onB.subscribe(paused.id))).toBe("UNSUPPORTED_OPERATION")
    }))))

  it.each(transports)("%s: a paused task canceled on A ends its subscription on B with CANCELED", (transport) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const { a, b } = yield* replicas
      const onA = yield* callerOn(a.url, transport, undefined)
      const onB = yield* callerOn(b.url, transport, undefined)
      const paused = taskOf(yield* onA.send("ask"))
      const subscription = onB.client.resubscribeTask({ id: paused.id, tenant: "" }, onB.options)
      yield* Effect.promise(() => subscription.next())
      const rest = collect(subscription)
      expect(yield* Effect.promise(() => stillOpen(rest))).toBe("open")
      expect(taskOf(yield* onA.cancel(paused.id)).status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect((yield* Effect.promise(() => rest)).map(shapeOf)).toEqual(["status TASK_STATE_CANCELED Task cancellation requested by user."])
    }))))
})
