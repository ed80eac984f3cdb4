/**
 * `SubscribeToTask` through a pause on two replicas sharing PostgreSQL
 * (tasks and event log): subscribers on both replicas stay open while the
 * task waits for input or authentication, get the events of the run the
 * answer starts on either replica, and end with the task; a cancel of the
 * paused task on one replica ends the subscription on the other. The
 * callers are the SDK's raw clients, on every transport.
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import { callerOn, transports } from "./fixtures/callers.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import {
  answeredWhileSubscribed,
  canceledWhileSubscribed,
  pausesByTransport,
  pausingAgent
} from "./fixtures/pausingAgent.js"

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

describe("SubscribeToTask through a pause, on replicas", () => {
  it.each(pausesByTransport)(
    "%s, paused by %j on A: subscribers on A and B get the answer's run on B, then their streams end",
    (transport, text, state) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const { a, b } = yield* replicas
        const onA = yield* callerOn(a.url, transport, undefined)
        const onB = yield* callerOn(b.url, transport, undefined)
        yield* answeredWhileSubscribed(onA, [onA, onB], onB, text, state)
      })))
  )

  it.each(transports)(
    "%s: a paused task canceled on A ends its subscription on B with CANCELED",
    (transport) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const { a, b } = yield* replicas
        const onA = yield* callerOn(a.url, transport, undefined)
        const onB = yield* callerOn(b.url, transport, undefined)
        yield* canceledWhileSubscribed(onA, onB, onA)
      })))
  )
})
