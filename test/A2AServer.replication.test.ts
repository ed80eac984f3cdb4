/**
 * Two servers on one task store and one event log act as one: a run on A is
 * streamed by a subscriber on B, and a stream cut on A resumes on B right
 * after its last event, with the SDK's raw clients as the callers, on every
 * transport that streams.
 */
import { formatSSEEvent, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import { InMemoryTaskStore, ServerCallContext } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, FastCheck, Logger } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as EventId from "../src/internal/wire/eventId.js"
import * as Part from "../src/Part.js"
import { callerOn, transports } from "./fixtures/callers.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import { startPostgres } from "./fixtures/postgres.js"
import { userMessage } from "./fixtures/serverAgents.js"

/** Agents whose runs wait, after their first step, until the test lets them go on. */
const gatedAgent = (gate: Deferred.Deferred<void>): AgentExecutor.Agent<never> => (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    const steps = Number(/^steps (\d+)$/.exec(text)?.[1] ?? "3")
    yield* AgentExecutor.status("step 1")
    yield* Deferred.await(gate)
    for (let i = 2; i <= steps; i++) yield* AgentExecutor.status(`step ${i}`)
    return AgentExecutor.completedText(`done after ${steps} steps`)
  })

/** Replicas `a` and `b` of a gated agent on one task store and the log `replication` names. */
const replicasOn = (replication: A2AServer.ReplicationOptions) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const taskStore = new InMemoryTaskStore()
    const serve = (name: string) =>
      A2AServer.make({
        agent: gatedAgent(gate),
        card: { name, description: "a replica" },
        taskStore,
        replication,
        shutdownTimeout: "1 second"
      })
    const a = yield* serve("a")
    const b = yield* serve("b")
    return { a, b, gate, taskStore }
  })

const replicas = Effect.suspend(() => replicasOn({ url: databaseUrl() }))

/** A PostgreSQL of the test's own, which it can restart. */
const restartablePostgres = Effect.acquireRelease(
  Effect.promise(() => startPostgres({ restartable: true })),
  (running) => Effect.promise(() => running.stop())
)

const request = (text: string) => ({
  tenant: "",
  message: userMessage(text),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
  metadata: {}
})

const numberOf = (event: StreamResponse): number => {
  const seq = EventId.sequenceOf(event)
  expect(seq, `no number on ${JSON.stringify(event)}`).toBeTypeOf("number")
  return seq!
}

const shapeOf = (event: StreamResponse): string => {
  const payload = event.payload!
  switch (payload.$case) {
    case "statusUpdate":
      return `status ${payload.value.status?.state} ${Part.textOf([])}${
        JSON.stringify(payload.value.status?.message?.parts.map((part) => part.content?.value) ?? [])
      }`
    case "task":
      return `task ${payload.value.status?.state}`
    default:
      return payload.$case
  }
}

const collect = async (events: AsyncGenerator<StreamResponse>, limit = 100): Promise<Array<StreamResponse>> => {
  const seen: Array<StreamResponse> = []
  for await (const event of events) {
    seen.push(event)
    if (seen.length >= limit) break
  }
  return seen
}

describe("replicas on one event log", () => {
  it.each(transports.filter((t) => t !== "GRPC" || true))(
    "%s: a subscriber on B streams a run on A, Task first, until it ends",
    (transport) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const { a, b, gate } = yield* replicas
        const onA = yield* callerOn(a.url, transport, undefined)
        const onB = yield* callerOn(b.url, transport, undefined)
        const stream = onA.client.sendMessageStream(request("steps 3"), onA.options)
        const first = (yield* Effect.promise(() => stream.next())).value as StreamResponse
        expect(first.payload?.$case).toBe("task")
        const taskId = (first.payload!.value as Task).id
        // The run is on A, waiting at its first step; B has no bus of it.
        const subscription = onB.client.resubscribeTask({ id: taskId, tenant: "" }, onB.options)
        const head = (yield* Effect.promise(() => subscription.next())).value as StreamResponse
        expect(head.payload?.$case).toBe("task")
        yield* Deferred.succeed(gate, undefined)
        const rest = yield* Effect.promise(() => collect(subscription))
        const onAll = yield* Effect.promise(() => collect(stream))
        const all = [first, ...onAll]
        // B's Task is the task as of some event of A's stream; what follows it is A's stream from there on.
        const at = numberOf(head)
        expect(rest.map(numberOf)).toEqual(all.map(numberOf).filter((seq) => seq > at))
        expect(rest.map(shapeOf)).toEqual(all.filter((event) => numberOf(event) > at).map(shapeOf))
        expect(rest.at(-1)?.payload?.$case).toBe("statusUpdate")
        expect(all.map(numberOf)).toEqual(all.map((_, i) => i + 1))
      })))
  )

  it.each(transports)(
    "%s: a stream cut on A resumes on B after its last event, none lost, none repeated",
    (transport) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const { a, b, gate } = yield* replicas
        const onA = yield* callerOn(a.url, transport, undefined)
        const onB = yield* callerOn(b.url, transport, undefined)
        const stream = onA.client.sendMessageStream(request("steps 4"), onA.options)
        const seen = [
          (yield* Effect.promise(() => stream.next())).value as StreamResponse,
          (yield* Effect.promise(() => stream.next())).value as StreamResponse
        ]
        yield* Effect.promise(() => stream.return(undefined))
        const taskId = (seen[0]!.payload!.value as Task).id
        yield* Deferred.succeed(gate, undefined)
        const resumed = yield* Effect.promise(() =>
          collect(onB.client.resubscribeTask({ id: taskId, tenant: "" }, {
            ...onA.options,
            serviceParameters: { "Last-Event-ID": String(numberOf(seen.at(-1)!)) }
          }))
        )
        const joined = [...seen, ...resumed]
        expect(joined.map(numberOf)).toEqual(joined.map((_, i) => i + 1))
        expect(joined.map(shapeOf).slice(2)).toEqual([
          ...[2, 3, 4].map((i) => expect.stringContaining(`step ${i}`)),
          expect.stringContaining(`done after 4 steps`)
        ])
      })))
  )

  it("resuming after the run ended still gets the events missed, then ends; a plain subscription to it is refused", () =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const { a, b, gate } = yield* replicas
      yield* Deferred.succeed(gate, undefined)
      const onA = yield* callerOn(a.url, "JSONRPC", undefined)
      const onB = yield* callerOn(b.url, "JSONRPC", undefined)
      const all = yield* Effect.promise(() => collect(onA.client.sendMessageStream(request("steps 3"), onA.options)))
      const taskId = (all[0]!.payload!.value as Task).id
      const from = (cursor: string) =>
        Effect.promise(() =>
          collect(
            onB.client.resubscribeTask({ id: taskId, tenant: "" }, { serviceParameters: { "Last-Event-ID": cursor } })
          )
            .then((events) => ({ events }), (error: unknown) => ({ error }))
        )
      const after2 = yield* from("2")
      expect("events" in after2 && after2.events.map(numberOf)).toEqual(all.map(numberOf).slice(2))
      const afterLast = yield* from(String(all.length))
      expect("events" in afterLast && afterLast.events).toEqual([])
      const past = yield* from(String(all.length + 1))
      expect("error" in past && String(past.error)).toMatch(/past the last event/)
      const invalid = yield* from("two")
      expect("error" in invalid && String(invalid.error)).toMatch(/Last-Event-ID must be/)
      const plain = yield* Effect.promise(() =>
        collect(onB.client.resubscribeTask({ id: taskId, tenant: "" }, {})).then(
          () => "streamed",
          (error: unknown) => String(error)
        )
      )
      expect(plain).toMatch(/terminal state/)
    }))))

  it("each SSE event of the JSON-RPC and HTTP+JSON streams carries its number as its id; the card declares the extension", () =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const { a, gate } = yield* replicas
      yield* Deferred.succeed(gate, undefined)
      expect(a.card.capabilities?.extensions?.map((extension) => extension.uri)).toContain(EventId.resumeExtensionUri)
      const rpc = yield* Effect.promise(() =>
        fetch(a.rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json", "a2a-version": "1.0" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "SendStreamingMessage",
            params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "steps 2" }] } }
          })
        }).then((response) => response.text())
      )
      const ids = [...rpc.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))
      expect(ids).toEqual(ids.map((_, i) => i + 1))
      expect(ids.length).toBeGreaterThanOrEqual(4)
      const rest = yield* Effect.promise(() =>
        fetch(`${a.urls["HTTP+JSON"]}/message:stream`, {
          method: "POST",
          headers: { "content-type": "application/json", "a2a-version": "1.0" },
          body: JSON.stringify({
            message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "steps 2" }] }
          })
        }).then((response) => response.text())
      )
      const restIds = [...rest.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))
      expect(restIds).toEqual(restIds.map((_, i) => i + 1))
      expect(restIds.length).toBeGreaterThanOrEqual(4)
    }))))

  it(
    "PostgreSQL restarted mid-run: a subscriber on B still gets every event of the run on A, once, in order",
    () =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const postgres = yield* restartablePostgres
        const { a, b, gate } = yield* replicasOn({ url: postgres.url, pollInterval: "200 millis" })
        const onA = yield* callerOn(a.url, "JSONRPC", undefined)
        const onB = yield* callerOn(b.url, "JSONRPC", undefined)
        const stream = onA.client.sendMessageStream(request("steps 6"), onA.options)
        const first = (yield* Effect.promise(() => stream.next())).value as StreamResponse
        const taskId = (first.payload!.value as Task).id
        const subscription = onB.client.resubscribeTask({ id: taskId, tenant: "" }, onB.options)
        const head = (yield* Effect.promise(() => subscription.next())).value as StreamResponse
        // While the database is down, the run goes on: its steps are queued for the log, and written once it is back.
        yield* Effect.promise(() =>
          postgres.restart(() => Effect.runPromise(Deferred.succeed(gate, undefined)).then(() => undefined))
        )
        const rest = yield* Effect.promise(() => collect(subscription))
        const all = [first, ...(yield* Effect.promise(() => collect(stream)))]
        // B may have subscribed before A's first step reached the log: B's Task is the task as of some event of A's stream.
        const at = numberOf(head)
        expect(rest.map(numberOf)).toEqual(all.map(numberOf).filter((seq) => seq > at))
        expect(rest.map(shapeOf)).toEqual(all.filter((event) => numberOf(event) > at).map(shapeOf))
        expect(rest.slice(-6).map(shapeOf)).toEqual([
          ...[2, 3, 4, 5, 6].map((i) => expect.stringContaining(`step ${i}`)),
          expect.stringContaining("done after 6 steps")
        ])
      }))),
    120_000
  )

  it(
    "a replica that cannot renew its claims for a whole lease stops its runs: they end FAILED, and its log says why",
    () =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const postgres = yield* restartablePostgres
        const logs: Array<string> = []
        const { a, taskStore } = yield* replicasOn({ url: postgres.url, lease: "1 second" }).pipe(
          Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message)))))
        )
        const onA = yield* callerOn(a.url, "JSONRPC", undefined)
        const stream = onA.client.sendMessageStream(request("steps 2"), onA.options)
        const first = (yield* Effect.promise(() => stream.next())).value as StreamResponse
        const taskId = (first.payload!.value as Task).id
        yield* Effect.promise(() => postgres.restart(() => new Promise((resolve) => setTimeout(resolve, 2_500))))
        const task = yield* Effect.promise(() => taskStore.load(taskId, new ServerCallContext()))
        expect(task?.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        expect(JSON.stringify(task?.status?.message)).toMatch(/error_id: [0-9a-f]{12}/)
        expect(logs.join("\n")).toMatch(/run claims lapsed unrenewed: its runs stop/)
        yield* Effect.promise(() => stream.return(undefined))
      }))),
    120_000
  )

  it.prop(
    "without a number, an SSE event is the SDK's formatSSEEvent byte for byte",
    [FastCheck.jsonValue()],
    ([value]) => {
      expect(EventId.sseEvent(value, undefined)).toBe(formatSSEEvent(value))
    }
  )
})
