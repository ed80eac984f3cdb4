/**
 * `SubscribeToTask` through a pause on two replicas sharing PostgreSQL
 * (tasks and event log): subscribers on both replicas stay open while the
 * task waits for input or authentication, get the events of the run the
 * answer starts on either replica, and end with the task; a cancel of the
 * paused task on one replica ends the subscription on the other. The
 * callers are the SDK's raw clients, on every transport.
 */
import { TaskState } from "@a2a-js/sdk"
import { A2AService } from "@a2a-js/sdk/server/grpc"
import { describe, expect, it } from "@effect/vitest"
import * as Grpc from "@grpc/grpc-js"
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
import { eventually, rpc, sendTo, userMessage } from "./fixtures/serverAgents.js"

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

describe("SubscribeToTask resumed at a paused task's last event (Last-Event-ID)", () => {
  for (const transport of ["JSONRPC", "HTTP+JSON", "GRPC"] as const) {
    it.scopedLive(`${transport}: a caller who leaves before any event comes lets go of its place in maxInFlight`, () =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({
          agent: pausingAgent,
          card: { name: "resumed", description: "a replica" },
          replication: { url: databaseUrl(), pollInterval: "200 millis" },
          maxInFlight: 1,
          transports: ["JSONRPC", "HTTP+JSON", "GRPC"],
          shutdownTimeout: "1 second"
        })
        // A counted request that holds nothing once answered (TaskNotFound): shed (429) while the one place is held.
        const quick = Effect.map(
          rpc(server.rpcUrl, "SubscribeToTask", { id: "no-such-task" }),
          (answer) => answer.status
        )
        const task = yield* sendTo(server.url, userMessage("ask"))
        expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        yield* eventually(quick, (status) => status === 200)
        const subscribe = (headers: Record<string, string>, signal: AbortSignal) =>
          transport === "HTTP+JSON"
            ? fetch(`${server.urls["HTTP+JSON"]}/tasks/${task.id}:subscribe`, {
              method: "POST",
              headers: { "a2a-version": "1.0", ...headers },
              signal
            })
            : fetch(server.rpcUrl, {
              method: "POST",
              headers: { "content-type": "application/json", "a2a-version": "1.0", ...headers },
              body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SubscribeToTask", params: { id: task.id } }),
              signal
            })
        // On gRPC, the call is cancelled as the client leaves.
        // `answered`: whether anything came (the answer's head on HTTP, an event on gRPC).
        const resume = (cursor: string) => {
          let answered = false
          if (transport !== "GRPC") {
            const resumed = new AbortController()
            const settled = subscribe({ "last-event-id": cursor }, resumed.signal).then(
              () => void (answered = true),
              () => undefined
            )
            return { leave: () => resumed.abort(), settled, answered: () => answered }
          }
          const remote = new Grpc.Client(server.urls.GRPC!, Grpc.credentials.createInsecure())
          const metadata = new Grpc.Metadata()
          metadata.set("a2a-version", "1.0")
          metadata.set("last-event-id", cursor)
          const call = remote.makeServerStreamRequest(
            A2AService.subscribeToTask.path,
            A2AService.subscribeToTask.requestSerialize,
            A2AService.subscribeToTask.responseDeserialize,
            { tenant: "", id: task.id },
            metadata
          )
          call.on("data", () => void (answered = true))
          const settled = new Promise((resolve) => {
            call.on("error", resolve)
            call.on("end", resolve)
          }).finally(() => remote.close())
          return { leave: () => call.cancel(), settled, answered: () => answered }
        }
        // The number of the task's last event: the first a subscription from the start is handed.
        const whole = new AbortController()
        const head = yield* Effect.promise(async () => {
          const reader = (await subscribe({}, whole.signal)).body!.getReader()
          let text = ""
          for (let i = 0; i < 10 && !/^id: ?\d+$/m.test(text); i++) {
            const chunk = await reader.read()
            if (chunk.done) break
            text += new TextDecoder().decode(chunk.value)
          }
          whole.abort()
          return text
        })
        const last = /^id: ?(\d+)$/m.exec(head)?.[1]
        expect(last, head).toBeDefined()
        yield* eventually(quick, (status) => status === 200)
        // Resumed after the last event: nothing comes until the task's next run, and the caller leaves meanwhile.
        const resumed = resume(last!)
        yield* eventually(quick, (status) => status === 429).pipe(
          Effect.catchAllDefect(() => Effect.dieMessage("the resumed subscription never held the place"))
        )
        expect(resumed.answered()).toBe(false)
        resumed.leave()
        yield* Effect.promise(() => resumed.settled)
        const admitted = yield* eventually(quick, (status) => status !== 429, 500).pipe(
          Effect.catchAllDefect(() => Effect.dieMessage("the place was not let go once its caller left"))
        )
        expect(admitted).toBe(200)
      }))
  }
})
