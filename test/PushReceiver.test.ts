import { type StreamResponse, StreamResponse as StreamResponseCodec, TaskState, type TaskStatus } from "@a2a-js/sdk"
import { V03PushNotificationSerializer } from "@a2a-js/sdk/compat/v0_3/server"
import {
  DefaultPushNotificationSender,
  InMemoryPushNotificationStore,
  ServerCallContext,
  UnauthenticatedUser
} from "@a2a-js/sdk/server"
import { HttpRouter } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Option, Queue, Redacted } from "effect"
import * as Http from "node:http"
import * as PushReceiver from "../src/PushReceiver.js"
import { agentMessage, peerErrorId } from "./fixtures/peers.js"

const context = (version: string) =>
  new ServerCallContext({ user: new UnauthenticatedUser(), requestedVersion: version })

const statusUpdate = (taskId: string, state: TaskState, timestamp: string, text?: string): StreamResponse => ({
  payload: {
    $case: "statusUpdate",
    value: {
      taskId,
      contextId: "ctx-1",
      status: {
        state,
        message: text === undefined ? undefined : { ...agentMessage(text), taskId, contextId: "ctx-1" },
        timestamp
      } satisfies TaskStatus,
      metadata: undefined
    }
  }
})

/** The SDK's store and sender, pushing `taskId`'s notifications to `registration`, as A2A `version` shapes them. */
const sdkSender = (taskId: string, registration: PushReceiver.Registration, version: "1.0" | "0.3" = "1.0") =>
  Effect.promise(async () => {
    const store = new InMemoryPushNotificationStore()
    const ctx = context(version)
    await store.save(taskId, ctx, {
      tenant: "",
      id: registration.id,
      taskId,
      url: registration.url,
      token: Redacted.value(registration.token),
      authentication: undefined
    })
    const sender = new DefaultPushNotificationSender(store, {
      timeout: 2000,
      serializers: { "0.3": new V03PushNotificationSerializer() }
    })
    return (response: StreamResponse) => Effect.promise(() => sender.send(response, ctx))
  })

const post = (url: string, body: string, headers: Record<string, string>) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      body,
      headers: { "content-type": "application/a2a+json", ...headers },
      signal: AbortSignal.timeout(5000)
    })
      .then((r) => r.status)
  )

const drain = <A>(queue: Queue.Dequeue<A>) => Effect.map(Queue.takeAll(queue), Chunk.toReadonlyArray)

describe("PushReceiver", () => {
  it.scopedLive("the SDK's sender pushes a FAILED task: one Failed outcome with its error text, even pushed twice", () =>
    Effect.gen(function*() {
      const receiver = yield* PushReceiver.serve()
      const events = yield* receiver.subscribe
      const registration = yield* receiver.register({ agent: "booking" })
      const push = yield* sdkSender("task-1", registration)
      const failed = statusUpdate(
        "task-1",
        TaskState.TASK_STATE_FAILED,
        "2026-01-01T00:00:02Z",
        `Agent execution failed. (error_id: ${peerErrorId})`
      )
      yield* push(statusUpdate("task-1", TaskState.TASK_STATE_WORKING, "2026-01-01T00:00:01Z", "working"))
      yield* push(failed)
      yield* push(failed)
      const outcome = yield* receiver.outcome("task-1").pipe(Effect.timeout("5 seconds"))
      expect(outcome._tag).toBe("Failed")
      expect(outcome.agent).toBe("booking")
      expect(outcome.taskId).toBe("task-1")
      expect(outcome.text).toBe(`Agent execution failed. (error_id: ${peerErrorId})`)
      expect(outcome._tag === "Failed" && Option.getOrNull(outcome.errorId)).toBe(peerErrorId)
      const delivered = yield* drain(events)
      expect(delivered.map((e) => e._tag)).toEqual(["Status", "Finished"])
      expect(Option.map(yield* receiver.delivered("task-1"), (o) => o._tag)).toEqual(Option.some("Failed"))
    }))

  it.scopedLive("a v0.3 notification (the SDK's v0.3 serializer) is read too", () =>
    Effect.gen(function*() {
      const receiver = yield* PushReceiver.serve()
      const events = yield* receiver.subscribe
      const registration = yield* receiver.register({ agent: "legacy" })
      const push = yield* sdkSender("task-6", registration, "0.3")
      yield* push(statusUpdate("task-6", TaskState.TASK_STATE_WORKING, "2026-01-01T00:00:01Z", "working"))
      yield* push(
        statusUpdate(
          "task-6",
          TaskState.TASK_STATE_FAILED,
          "2026-01-01T00:00:02Z",
          `Agent execution failed. (error_id: ${peerErrorId})`
        )
      )
      const outcome = yield* receiver.outcome("task-6").pipe(Effect.timeout("5 seconds"))
      expect([outcome._tag, outcome.agent, outcome._tag === "Failed" && Option.getOrNull(outcome.errorId)]).toEqual([
        "Failed",
        "legacy",
        peerErrorId
      ])
      expect((yield* drain(events)).map((e) => e._tag)).toEqual(["Status", "Finished"])
    }))

  it.scopedLive("a wrong or missing token is answered 401 and nothing is delivered; a bearer token is accepted", () =>
    Effect.gen(function*() {
      const receiver = yield* PushReceiver.serve()
      const events = yield* receiver.subscribe
      const registration = yield* receiver.register({ taskId: "task-2" })
      const body = JSON.stringify(
        StreamResponseCodec.toJSON(
          statusUpdate("task-2", TaskState.TASK_STATE_COMPLETED, "2026-01-01T00:00:01Z", "done")
        )
      )
      expect(yield* post(receiver.url, body, {})).toBe(401)
      expect(yield* post(receiver.url, body, { "X-A2A-Notification-Token": "not-the-token" })).toBe(401)
      expect(yield* post(receiver.url, body, { authorization: `Bearer ${Redacted.value(registration.token)}x` })).toBe(
        401
      )
      // A token of another task does not carry this one.
      const other = yield* receiver.register({ taskId: "task-other" })
      expect(yield* post(receiver.url, body, { "X-A2A-Notification-Token": Redacted.value(other.token) })).toBe(401)
      expect(yield* drain(events)).toEqual([])
      expect(yield* receiver.delivered("task-2")).toEqual(Option.none())
      expect(yield* post(receiver.url, body, { authorization: `Bearer ${Redacted.value(registration.token)}` })).toBe(
        200
      )
      expect((yield* drain(events)).map((e) => e._tag)).toEqual(["Finished"])
    }))

  it.scopedLive("a body that is not a task's StreamResponse is answered 400 and nothing is delivered", () =>
    Effect.gen(function*() {
      const receiver = yield* PushReceiver.serve()
      const events = yield* receiver.subscribe
      const registration = yield* receiver.register()
      const headers = { "X-A2A-Notification-Token": Redacted.value(registration.token) }
      expect(yield* post(receiver.url, "{not json", headers)).toBe(400)
      expect(yield* post(receiver.url, JSON.stringify({ hello: "world" }), headers)).toBe(400)
      // A status update that names no task.
      expect(
        yield* post(
          receiver.url,
          JSON.stringify({ statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } }),
          headers
        )
      ).toBe(400)
      expect(yield* drain(events)).toEqual([])
    }))

  it.scopedLive("repeats and stale statuses are dropped with 2xx; nothing follows an end", () =>
    Effect.gen(function*() {
      const receiver = yield* PushReceiver.serve()
      const events = yield* receiver.subscribe
      const registration = yield* receiver.register({ taskId: "task-3" })
      const headers = { "X-A2A-Notification-Token": Redacted.value(registration.token) }
      const send = (response: StreamResponse) =>
        post(receiver.url, JSON.stringify(StreamResponseCodec.toJSON(response)), headers)
      const statuses = [
        statusUpdate("task-3", TaskState.TASK_STATE_SUBMITTED, "2026-01-01T00:00:02Z", "submitted"),
        // Of the same time, but further: delivered.
        statusUpdate("task-3", TaskState.TASK_STATE_WORKING, "2026-01-01T00:00:02Z", "second"),
        statusUpdate("task-3", TaskState.TASK_STATE_WORKING, "2026-01-01T00:00:01Z", "first, late"),
        statusUpdate("task-3", TaskState.TASK_STATE_WORKING, "2026-01-01T00:00:02Z", "second again"),
        statusUpdate("task-3", TaskState.TASK_STATE_COMPLETED, "2026-01-01T00:00:03Z", "done"),
        statusUpdate("task-3", TaskState.TASK_STATE_FAILED, "2026-01-01T00:00:04Z", "after the end")
      ]
      for (const status of statuses) expect(yield* send(status)).toBe(200)
      const delivered = yield* drain(events)
      expect(delivered.map((e) => e._tag === "Finished" ? e.outcome._tag : `${e._tag}:${"text" in e ? e.text : ""}`))
        .toEqual([
          "Status:submitted",
          "Status:second",
          "Completed"
        ])
      expect(Option.map(yield* receiver.delivered("task-3"), (o) => o.text)).toEqual(Option.some("done"))
    }))

  it.scopedLive("a task that goes on after a pause has a new outcome to wait for", () =>
    Effect.gen(function*() {
      const receiver = yield* PushReceiver.serve()
      const registration = yield* receiver.register({ taskId: "task-5" })
      const push = yield* sdkSender("task-5", registration)
      yield* push(statusUpdate("task-5", TaskState.TASK_STATE_INPUT_REQUIRED, "2026-01-01T00:00:01Z", "which date?"))
      expect((yield* receiver.outcome("task-5").pipe(Effect.timeout("5 seconds")))._tag).toBe("InputRequired")
      yield* push(statusUpdate("task-5", TaskState.TASK_STATE_WORKING, "2026-01-01T00:00:02Z", "working"))
      expect(yield* receiver.delivered("task-5")).toEqual(Option.none())
      yield* push(statusUpdate("task-5", TaskState.TASK_STATE_COMPLETED, "2026-01-01T00:00:03Z", "booked"))
      expect((yield* receiver.outcome("task-5").pipe(Effect.timeout("5 seconds"))).text).toBe("booked")
    }))

  it.scopedLive("its app mounts in a router of the user's own", () =>
    Effect.gen(function*() {
      const server = yield* NodeHttpServer.make(() => Http.createServer(), { host: "127.0.0.1", port: 0 })
      const port = server.address._tag === "TcpAddress" ? server.address.port : 0
      const receiver = yield* PushReceiver.make({ url: `http://127.0.0.1:${port}/hooks/a2a` })
      yield* server.serve(HttpRouter.empty.pipe(HttpRouter.post("/hooks/a2a", receiver.app)))
      const registration = yield* receiver.register({ agent: "mounted" })
      const push = yield* sdkSender("task-4", registration)
      yield* push(statusUpdate("task-4", TaskState.TASK_STATE_COMPLETED, "2026-01-01T00:00:01Z", "mounted ok"))
      const outcome = yield* receiver.outcome("task-4").pipe(Effect.timeout("5 seconds"))
      expect([outcome._tag, outcome.agent, outcome.text]).toEqual(["Completed", "mounted", "mounted ok"])
    }))
})
