/**
 * An agent's bare Message answer (`AgentExecutor.Message`, option
 * `messageReplies`): what the SDK's executor interface sees of it, what our
 * client reads of it on each transport, and what the server does around a
 * run that makes no task: idempotent repeats, the in-flight bound, the hooks,
 * the metrics and the run's span.
 */
import { type Message, type SendMessageConfiguration, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import {
  type AgentExecutionEvent,
  DefaultExecutionEventBus,
  InMemoryTaskStore,
  RequestContext
} from "@a2a-js/sdk/server"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Chunk, Deferred, Effect, Fiber, Metric, Stream } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import * as internalPgEventLog from "../src/internal/server/replication/pgEventLog.js"
import * as Observability from "../src/Observability.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteEvent from "../src/RemoteEvent.js"
import { reasonOf, settle, transports } from "./fixtures/callers.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import {
  anonymousContext,
  eventually,
  keyed,
  makeClient,
  rpc,
  seededTask,
  userMessage
} from "./fixtures/serverAgents.js"

/**
 * `ping …` answers with a message; `look …` reports progress, then answers
 * with a message; `wait …` answers with a message once `gate` opens; `slow`
 * completes after a moment, having published nothing before; `fail` dies;
 * anything else completes. Every run's text goes to `runs`.
 */
const replying = (runs: Array<string> = [], gate?: Deferred.Deferred<void>): AgentExecutor.Agent => (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    runs.push(text)
    if (text.startsWith("wait") && gate !== undefined) {
      yield* Deferred.await(gate)
      return AgentExecutor.messageText(`pong ${text}`)
    }
    if (text.startsWith("ping")) return AgentExecutor.messageText(`pong ${text}`)
    if (text.startsWith("look")) {
      yield* AgentExecutor.status("looking")
      return AgentExecutor.messageText("found")
    }
    if (text === "slow") return yield* Effect.as(Effect.sleep("50 millis"), AgentExecutor.completedText("done slow"))
    if (text === "fail") return yield* Effect.die(new Error("boom"))
    return AgentExecutor.completedText(`done ${text}`)
  })

const card = { name: "replying", description: "answers ping with a message" }

const textsOf = (message: Message | undefined) =>
  (message?.parts ?? []).flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : []))

const isMessage = (answer: Task | Message): answer is Message => !("status" in answer)

/** Every event of a streaming send, once the stream ends. */
const streamFrom = (client: Client, message: Message) =>
  Effect.promise(async () => {
    const events: Array<StreamResponse["payload"]> = []
    for await (
      const event of client.sendMessageStream({ tenant: "", message, configuration: undefined, metadata: {} })
    ) {
      events.push(event.payload)
    }
    return events
  })

/** The message a stream was: its one event. */
const streamedMessage = (events: ReadonlyArray<StreamResponse["payload"]>) => {
  expect(events.map((payload) => payload?.$case)).toEqual(["message"])
  return events[0]!.value as Message
}

const failedText = /^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/

describe("AgentExecutor: a bare Message answer, through the SDK's executor interface", () => {
  const contextFor = (
    text: string,
    options: { readonly task?: Task; readonly configuration?: SendMessageConfiguration } = {}
  ) =>
    new RequestContext(
      { tenant: "", message: userMessage(text), configuration: options.configuration, metadata: undefined },
      options.task?.id ?? crypto.randomUUID(),
      options.task?.contextId ?? crypto.randomUUID(),
      anonymousContext(),
      options.task
    )
  /** What the run published: the kind of each event, with its state or its message's text. */
  const recording = () => {
    const bus = new DefaultExecutionEventBus()
    const events: Array<AgentExecutionEvent> = []
    bus.on("event", (event) => events.push(event))
    const shape = () =>
      events.map((event) => {
        switch (event.kind) {
          case "task":
            return `task ${TaskState[event.data.status!.state]}`
          case "statusUpdate":
            return `${TaskState[event.data.status!.state]} ${textsOf(event.data.status?.message).join("")}`.trim()
          case "message":
            return `message ${textsOf(event.data).join("")}`
          case "artifactUpdate":
            return "artifact"
        }
      })
    return { bus, events, shape }
  }
  const run = (executor: AgentExecutor.EffectAgentExecutor, context: RequestContext) =>
    Effect.gen(function*() {
      const recorded = recording()
      yield* Effect.promise(() => executor.execute(context, recorded.bus))
      return recorded
    })

  it.scoped("with messageReplies, the answer is the one event: a message of the request's context, in no task", () =>
    Effect.gen(function*() {
      const executor = yield* AgentExecutor.make(replying(), { messageReplies: true })
      const context = contextFor("ping 1")
      const { bus, events, shape } = recording()
      const done = executor.execute(context, bus)
      // An agent that never waits answers within the call, as a plain SDK executor does.
      expect(shape()).toEqual(["message pong ping 1"])
      yield* Effect.promise(() => done)
      const message = events[0]!.data as Message
      expect([message.taskId, message.contextId, message.role]).toEqual(["", context.contextId, 2])
    }))

  it.scoped("without messageReplies, a Message result completes the task with that message", () =>
    Effect.gen(function*() {
      const executor = yield* AgentExecutor.make(replying())
      expect((yield* run(executor, contextFor("ping 2"))).shape()).toEqual([
        "task TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED pong ping 2"
      ])
    }))

  it.scoped("once the task is out (progress, a follow-up, a send answered at once), a Message result completes it", () =>
    Effect.gen(function*() {
      const executor = yield* AgentExecutor.make(replying(), { messageReplies: true })
      expect((yield* run(executor, contextFor("look 3"))).shape()).toEqual([
        "task TASK_STATE_WORKING",
        "TASK_STATE_WORKING looking",
        "TASK_STATE_COMPLETED found"
      ])
      const paused = seededTask(crypto.randomUUID(), TaskState.TASK_STATE_INPUT_REQUIRED, new Date().toISOString())
      expect((yield* run(executor, contextFor("ping 4", { task: paused }))).shape()).toEqual([
        "task TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED pong ping 4"
      ])
      const atOnce = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true }
      expect((yield* run(executor, contextFor("ping 5", { configuration: atOnce }))).shape()).toEqual([
        "task TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED pong ping 5"
      ])
    }))

  it.scopedLive("with messageReplies, a run's task goes out with its first event: none before, and a failure still ends it", () =>
    Effect.gen(function*() {
      const executor = yield* AgentExecutor.make(replying(), { messageReplies: true })
      const { bus, shape } = recording()
      const done = executor.execute(contextFor("slow"), bus)
      expect(shape()).toEqual([])
      yield* Effect.promise(() => done)
      expect(shape()).toEqual(["task TASK_STATE_WORKING", "TASK_STATE_COMPLETED done slow"])
      const failed = (yield* run(executor, contextFor("fail"))).shape()
      expect(failed[0]).toBe("task TASK_STATE_WORKING")
      expect(failed[1]).toMatch(/^TASK_STATE_FAILED /)
      expect(failed[1]!.slice("TASK_STATE_FAILED ".length)).toMatch(failedText)
      expect(failed).toHaveLength(2)
    }))

  it.scoped("afterExecute does not run for a message answer, which has no final status; a refused run is CANCELED", () =>
    Effect.gen(function*() {
      let after = 0
      const executor = yield* AgentExecutor.make(replying(), {
        messageReplies: true,
        beforeExecute: (request) => Effect.succeed(Part.textOf(request.message.parts) === "ping refused"),
        afterExecute: (_request, final) => Effect.sync(() => (after++, final))
      })
      expect((yield* run(executor, contextFor("ping 6"))).shape()).toEqual(["message pong ping 6"])
      expect(after).toBe(0)
      expect((yield* run(executor, contextFor("book"))).shape()).toEqual([
        "task TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED done book"
      ])
      expect(after).toBe(1)
      expect((yield* run(executor, contextFor("ping refused"))).shape()).toEqual([
        "task TASK_STATE_WORKING",
        "TASK_STATE_CANCELED Task canceled before execution."
      ])
    }))

  it.scoped("a message answer counts as completed, with its latency; its span says a2a.reply message, and has no task state", () => {
    const exporter = new InMemorySpanExporter()
    const Otel = NodeSdk.layer(() => ({
      spanProcessor: new SimpleSpanProcessor(exporter),
      resource: { serviceName: "message-test" }
    }))
    return Effect.gen(function*() {
      const name = `replying-${crypto.randomUUID()}`
      const executor = yield* AgentExecutor.make(replying(), { messageReplies: true, name })
      const count = (metric: Metric.Metric.Counter<number>) =>
        Effect.map(Metric.value(Metric.tagged(metric, "agent", name)), (state) => state.count)
      const latency = Effect.map(
        Metric.value(Metric.tagged(Observability.serverLatency, "agent", name)),
        (state) => state.count
      )
      const context = contextFor("ping 7")
      yield* run(executor, context)
      expect(yield* Effect.all([count(Observability.serverCompleted), count(Observability.serverFailed), latency]))
        .toEqual([1, 0, 1])
      const [span] = exporter.getFinishedSpans().filter((span) => span.name === Observability.executeSpanName)
      expect(span?.attributes).toMatchObject({
        "a2a.reply": "message",
        "a2a.task_id": context.taskId,
        "a2a.agent": name
      })
      expect(span?.attributes).not.toHaveProperty("a2a.task_state")
      expect(span?.status.code).not.toBe(2) // not ERROR
    }).pipe(Effect.provide(Otel))
  })
})

describe("A2AServer with messageReplies", () => {
  const serve = (options: Partial<A2AServer.Options<never, never>> = {}) =>
    A2AServer.make({ agent: replying(), card, messageReplies: true, ...options })

  for (const transport of transports) {
    it.scopedLive(`RemoteAgent reads a message answer as Completed with no task id, sent or streamed (${transport})`, () =>
      Effect.gen(function*() {
        const server = yield* serve()
        const remote = yield* RemoteAgent.make({
          name: "replying",
          url: server.url,
          timeout: "5 seconds",
          transports: [transport]
        })
        const sent = yield* remote.send("ping sent")
        expect(sent).toMatchObject({ _tag: "Completed", taskId: "", text: "pong ping sent", artifacts: [] })
        expect(sent.contextId).not.toBe("")
        const events = Chunk.toArray(yield* Stream.runCollect(remote.stream("ping streamed")))
        expect(events.map((event) => event._tag)).toEqual(["Finished"])
        expect((events[0] as RemoteEvent.Finished).outcome).toMatchObject({
          _tag: "Completed",
          taskId: "",
          text: "pong ping streamed"
        })
        // Progress first: a task, which the message completes.
        const looked = yield* remote.send("look 8")
        expect(looked).toMatchObject({ _tag: "Completed", text: "found" })
        expect(looked.taskId).not.toBe("")
      }))
  }

  it.scopedLive("a v0.3 caller gets the message in the v0.3 shape (kind message, role agent), sent or streamed", () =>
    Effect.gen(function*() {
      const server = yield* serve()
      const params = (text: string) => ({
        message: { kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "text", text }] }
      })
      const sent = JSON.parse(
        (yield* rpc(`${server.url}/a2a/jsonrpc`, "message/send", params("ping legacy"), "0.3")).text
      )
      expect(sent.result).toMatchObject({
        kind: "message",
        role: "agent",
        parts: [{ kind: "text", text: "pong ping legacy" }]
      })
      expect(sent.result.taskId ?? "").toBe("")
      const streamed =
        (yield* rpc(`${server.url}/a2a/jsonrpc`, "message/stream", params("ping legacy stream"), "0.3")).text
      const events = streamed.split("\n").filter((line) => line.startsWith("data:")).map((line) =>
        JSON.parse(line.slice(5)).result
      )
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({
        kind: "message",
        role: "agent",
        parts: [{ kind: "text", text: "pong ping legacy stream" }]
      })
    }))

  it.scopedLive("an idempotent repeat gets the same message, sent or streamed, after the run or joining it; one run per key", () =>
    Effect.gen(function*() {
      const runs: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const server = yield* serve({ agent: replying(runs, gate), idempotency: {} })
      const client = yield* makeClient(server.url)
      const send = (message: Message) =>
        Effect.promise(() => client.sendMessage({ tenant: "", message, configuration: undefined, metadata: {} }))
      const stream = (message: Message) => streamFrom(client, message)
      const messageOf = (answer: Task | Message) => {
        expect(isMessage(answer)).toBe(true)
        return answer as Message
      }

      // After the run.
      const first = messageOf(yield* send(keyed("ping k", "k-1")))
      const again = messageOf(yield* send(keyed("ping k", "k-1")))
      expect([again.messageId, textsOf(again)]).toEqual([first.messageId, ["pong ping k"]])
      const streamed = streamedMessage(yield* stream(keyed("ping s", "k-2")))
      expect(streamedMessage(yield* stream(keyed("ping s", "k-2"))).messageId).toBe(streamed.messageId)
      expect(runs).toEqual(["ping k", "ping s"])

      // Joining a run that has no task out yet.
      const original = yield* Effect.fork(send(keyed("wait a", "k-3")))
      const originalStream = yield* Effect.fork(stream(keyed("wait b", "k-4")))
      yield* eventually(Effect.sync(() => runs.length), (n) => n === 4)
      const joined = yield* Effect.fork(send(keyed("wait a", "k-3")))
      const joinedStream = yield* Effect.fork(stream(keyed("wait b", "k-4")))
      yield* Effect.sleep("100 millis")
      yield* Deferred.succeed(gate, undefined)
      const [a, b] = [messageOf(yield* Fiber.join(original)), messageOf(yield* Fiber.join(joined))]
      expect([b.messageId, textsOf(b)]).toEqual([a.messageId, ["pong wait a"]])
      const [c, d] = [
        streamedMessage(yield* Fiber.join(originalStream)),
        streamedMessage(yield* Fiber.join(joinedStream))
      ]
      expect([d.messageId, textsOf(d)]).toEqual([c.messageId, ["pong wait b"]])
      expect(runs.filter((text) => text.startsWith("wait")).sort()).toEqual(["wait a", "wait b"])
    }).pipe(Effect.provide(IdempotencyLedger.layerMemory({ pollInterval: "10 millis" }))))

  it.scopedLive("a message answer holds its maxInFlight place while it runs, and lets go of it once answered", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const runs: Array<string> = []
      const server = yield* serve({ agent: replying(runs, gate), maxInFlight: 1 })
      const client: Client = yield* makeClient(server.url)
      const send = (text: string) =>
        settle(() =>
          client.sendMessage({ tenant: "", message: userMessage(text), configuration: undefined, metadata: {} })
        )
      for (const i of [1, 2, 3]) {
        const answer = yield* send(`ping ${i}`)
        expect("ok" in answer && isMessage(answer.ok) && textsOf(answer.ok)).toEqual([`pong ping ${i}`])
      }
      const held = yield* Effect.fork(send("wait"))
      yield* eventually(Effect.sync(() => runs.at(-1)), (text) => text === "wait")
      expect(reasonOf(yield* send("ping meanwhile"))).not.toBe("ok")
      yield* Deferred.succeed(gate, undefined)
      expect("ok" in (yield* Fiber.join(held))).toBe(true)
      expect(reasonOf(yield* send("ping after"))).toBe("ok")
    }))

  it.scopedLive(
    "with replication: a message answer ends its task's log, which retention then clears; a keyed streaming repeat on another replica gets the message",
    () =>
      Effect.gen(function*() {
        const url = databaseUrl()
        const runs: Array<string> = []
        const taskIds: Array<string> = []
        const gate = yield* Deferred.make<void>()
        const agent = replying(runs, gate)
        const taskStore = new InMemoryTaskStore()
        const replica = (name: string) =>
          serve({
            agent: (request) => Effect.zipRight(Effect.sync(() => taskIds.push(request.taskId)), agent(request)),
            card: { name, description: "a replica" },
            taskStore,
            replication: { url, retention: "1 second", pollInterval: "50 millis" },
            idempotency: {},
            shutdownTimeout: "1 second"
          })
        const a = yield* replica("a")
        const b = yield* replica("b")
        const log = yield* internalPgEventLog.makePg({ url })
        const entries = (taskId: string) => Effect.orDie(log.read(taskId, 0))

        const clientA = yield* makeClient(a.url)
        const clientB = yield* makeClient(b.url)
        const answer = yield* Effect.promise(() =>
          clientA.sendMessage({
            tenant: "",
            message: userMessage("ping logged"),
            configuration: undefined,
            metadata: {}
          })
        )
        expect(isMessage(answer) && textsOf(answer)).toEqual(["pong ping logged"])
        const taskId = taskIds.at(-1)!
        // Its one event, the message, is logged; then, the task ended, retention clears it.
        yield* eventually(entries(taskId), (logged) => logged.length === 1)
        yield* eventually(entries(taskId), (logged) => logged.length === 0, 500)

        const original = yield* Effect.fork(streamFrom(clientA, keyed("wait r", "k-r")))
        yield* eventually(Effect.sync(() => runs.at(-1)), (text) => text === "wait r")
        const repeat = yield* Effect.fork(streamFrom(clientB, keyed("wait r", "k-r")))
        yield* Effect.sleep("200 millis")
        yield* Deferred.succeed(gate, undefined)
        const [first, again] = [
          streamedMessage(yield* Fiber.join(original)),
          streamedMessage(yield* Fiber.join(repeat))
        ]
        expect([again.messageId, textsOf(again)]).toEqual([first.messageId, ["pong wait r"]])
        expect(runs.filter((text) => text === "wait r")).toHaveLength(1)
      }).pipe(Effect.provide(IdempotencyLedger.layerMemory({ pollInterval: "10 millis" }))),
    60_000
  )
})
