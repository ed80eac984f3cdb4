/**
 * Request-level idempotency of A2AServer: real servers on 127.0.0.1, the
 * SDK's client and raw JSON-RPC posts, an in-memory ledger.
 */
import {
  type Message,
  SendMessageRequest,
  type StreamResponse,
  type Task,
  Task as TaskCodec,
  TaskState
} from "@a2a-js/sdk"
import type { Client } from "@a2a-js/sdk/client"
import { InMemoryTaskStore, ServerCallContext, type TaskStore, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, FastCheck, Layer, Option, Runtime, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AClientError from "../src/A2AClientError.js"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Idempotency from "../src/Idempotency.js"
import * as IdempotencyLedger from "../src/IdempotencyLedger.js"
import { fingerprintOf } from "../src/internal/server/idempotency/idempotencyEntry.js"
import * as internalMakeStore from "../src/internal/server/store/makeStore.js"
import * as internalStore from "../src/internal/server/store/store.js"
import * as taskState from "../src/internal/wire/taskState.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import * as RetryPolicy from "../src/RetryPolicy.js"
import * as FaultProxy from "./fixtures/faultProxy.js"
import {
  busListeners,
  captureLogs,
  eventually,
  keyed,
  makeClient,
  openStream,
  rpc,
  sendMessage,
  sendTo,
  textOf,
  userMessage
} from "./fixtures/serverAgents.js"

const card = { name: "idempotent", description: "A2AServer with request-level idempotency" }

/** Every event of a streaming send, once the stream ends. */
/** Every event of the stream; `onFirst` hears its first. */
const collectStream = (client: Client, message: Message, onFirst?: () => void) =>
  Effect.promise(async () => {
    const events: Array<StreamResponse> = []
    for await (
      const event of client.sendMessageStream({ tenant: "", message, configuration: undefined, metadata: {} })
    ) {
      if (events.length === 0) onFirst?.()
      events.push(event)
    }
    return events
  })

const rawSend = (url: string, message: Message, method = "SendMessage") =>
  Effect.map(
    rpc(
      `${url}/a2a/jsonrpc`,
      method,
      SendMessageRequest.toJSON({
        tenant: "",
        message,
        configuration: undefined,
        metadata: {}
      }),
      "1.0"
    ),
    ({ text }) => JSON.parse(text) as { result?: { task?: { id: string } }; error?: { code: number; message: string } }
  )

/** Counts runs per first text part; `gate` holds every run until it is opened. */
const countingAgent = (runs: Map<string, number>, options: { fail?: boolean; gate?: Deferred.Deferred<void> } = {}) =>
  ((request) =>
    Effect.gen(function*() {
      const text = Part.textOf(request.message.parts)
      runs.set(text, (runs.get(text) ?? 0) + 1)
      if (options.gate !== undefined) yield* Deferred.await(options.gate)
      if (options.fail === true) return yield* Effect.fail(new Error("boom"))
      return AgentExecutor.completedText(`done ${text}`)
    })) as AgentExecutor.Agent<Error>

const withLedger = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, IdempotencyLedger.layerMemory({ pollInterval: "10 millis" }))

// A ledger whose `abandon` takes as long as a slow database round trip.
const slowAbandon = Layer.effect(
  IdempotencyLedger.IdempotencyLedger,
  Effect.map(IdempotencyLedger.IdempotencyLedger, (ledger) => ({
    ...ledger,
    abandon: (request: Parameters<typeof ledger.abandon>[0]) =>
      Effect.zipRight(Effect.sleep("300 millis"), ledger.abandon(request))
  }))
).pipe(Layer.provide(IdempotencyLedger.layerMemory({ pollInterval: "10 millis" })))

describe("A2AServer request-level idempotency", () => {
  it.scopedLive("a repeat after the end returns the same task, in its final state, without running again", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const server = yield* A2AServer.make({ agent: countingAgent(runs), card, idempotency: {} })
      const first = yield* sendTo(server.url, keyed("book", "k-1"))
      const again = yield* sendTo(server.url, keyed("book", "k-1"))
      expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(again.id).toBe(first.id)
      expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(again)).toBe("done book")
      expect(runs.get("book")).toBe(1)
      // Without a key, every send is a new task.
      const plain1 = yield* sendTo(server.url, userMessage("plain"))
      const plain2 = yield* sendTo(server.url, userMessage("plain"))
      expect(plain1.id).not.toBe(plain2.id)
      expect(runs.get("plain")).toBe(2)
    })))

  it.scopedLive("a keyed request that is refused before any run is refused again on a repeat, never answered with the old task", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const server = yield* A2AServer.make({ agent: countingAgent(runs), card, idempotency: {} })
      const ended = yield* sendTo(server.url, userMessage("book"))
      expect(ended.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      // A follow-up to a task that has ended: -32004, for the first call and for its retry, sent or streamed.
      const followUp = keyed("again", "k-ended", { taskId: ended.id, contextId: ended.contextId })
      for (const method of ["SendMessage", "SendMessage", "SendStreamingMessage", "SendMessage"]) {
        const answer = yield* rpc(
          `${server.url}/a2a/jsonrpc`,
          method,
          SendMessageRequest.toJSON({
            tenant: "",
            message: { ...followUp, messageId: crypto.randomUUID() },
            configuration: undefined,
            metadata: {}
          }),
          "1.0"
        )
        expect(answer.text).toContain(`"code":-32004`)
        expect(answer.text).not.toContain(`"result"`)
      }
      expect(runs.get("again")).toBeUndefined()
    })))

  it.scopedLive("v0.3 message/send is deduplicated too, answered in the v0.3 shape", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const server = yield* A2AServer.make({ agent: countingAgent(runs), card, idempotency: {} })
      const legacySend = Effect.map(
        Effect.suspend(() =>
          rpc(`${server.url}/a2a/jsonrpc`, "message/send", {
            message: {
              kind: "message",
              messageId: crypto.randomUUID(),
              role: "user",
              parts: [{ kind: "text", text: "legacy" }],
              metadata: { [Idempotency.metadataKey]: "k-legacy" }
            }
          }, "0.3")
        ),
        ({ text }) => JSON.parse(text) as { result?: { kind: string; id: string; status: { state: string } } }
      )
      const first = yield* legacySend
      const again = yield* legacySend
      expect(first.result?.kind).toBe("task")
      expect(again.result?.id).toBe(first.result?.id)
      expect(again.result?.status.state).toBe("completed")
      expect(runs.get("legacy")).toBe(1)
    })))

  it.scopedLive("a FAILED task is returned as is on a repeat, and the header alone carries the key", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const server = yield* A2AServer.make({ agent: countingAgent(runs, { fail: true }), card, idempotency: {} })
      const first = yield* sendTo(server.url, userMessage("pay"), { [Idempotency.headerName]: "k-2" })
      const again = yield* sendTo(server.url, userMessage("pay"), { [Idempotency.headerName]: "k-2" })
      expect(first.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      expect(again.id).toBe(first.id)
      expect(again.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      expect(textOf(again)).toBe(textOf(first))
      expect(runs.get("pay")).toBe(1)
    })))

  it.scopedLive("a run whose task the store refuses is recorded FAILED with an error id: a repeat gets that, and does not run again", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const logs = captureLogs()
      // A store that refuses every save once the run has begun (as a column too short for an id does).
      const memory = new InMemoryTaskStore()
      const taskStore: TaskStore = {
        load: (taskId, context) => memory.load(taskId, context),
        list: (params, context) => memory.list(params, context),
        save: async (task, context) => {
          if (task.status?.state !== TaskState.TASK_STATE_FAILED) {
            throw new Error("value too long for type character varying(36)")
          }
          return memory.save(task, context)
        }
      }
      const server = yield* A2AServer.make({
        agent: countingAgent(runs),
        card,
        idempotency: {},
        taskStore,
        finalSaveTimeout: "300 millis"
      }).pipe(
        Effect.provide(logs.layer)
      )
      const first = yield* rawSend(server.url, keyed("ship", "k-store"))
      expect(first.error?.code).toBe(-32603)
      const again = yield* sendTo(server.url, keyed("ship", "k-store"))
      expect(runs.get("ship")).toBe(1)
      expect(again.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      const errorId = /error_id: ([0-9a-f]{12})/.exec(textOf(again))?.[1]
      expect(errorId).toBeDefined()
      expect(logs.lines.find((line) => line.annotations["errorId"] === errorId)).toMatchObject({
        level: "ERROR",
        annotations: { taskId: again.id, idempotencyKey: "k-store", savedToStore: "true" }
      })
    })))

  it.scopedLive("a store that is down for a moment: the entry records the end the run writes once it is back, as the store holds it", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const memory = new InMemoryTaskStore()
      const store = { down: true }
      const taskStore: TaskStore = {
        load: (taskId, context) =>
          store.down ? Promise.reject(new Error("connection refused")) : memory.load(taskId, context),
        list: (params, context) => memory.list(params, context),
        save: (task, context) =>
          store.down ? Promise.reject(new Error("connection refused")) : memory.save(task, context)
      }
      const server = yield* A2AServer.make({ agent: countingAgent(runs), card, idempotency: {}, taskStore })
      const first = yield* rawSend(server.url, keyed("ship", "k-outage"))
      expect(first.error?.code).toBe(-32603)
      yield* Effect.sleep("300 millis")
      store.down = false
      const again = yield* sendTo(server.url, keyed("ship", "k-outage"))
      const context = new ServerCallContext({ user: new UnauthenticatedUser() })
      const stored = yield* Effect.promise(() => memory.load(again.id, context))
      expect([again.status?.state, stored?.status?.state]).toEqual([
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_COMPLETED
      ])
      expect(runs.get("ship")).toBe(1)
    })))

  it.scopedLive("a repeat while it runs joins it: same task id, one run; a blocking caller gets the end, a streaming one follows the run", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const gate = yield* Deferred.make<void>()
      const server = yield* A2AServer.make({ agent: countingAgent(runs, { gate }), card, idempotency: {} })
      const first = yield* Effect.fork(sendTo(server.url, keyed("slow", "k-3")))
      yield* eventually(Effect.sync(() => runs.get("slow") ?? 0), (n) => n === 1)
      const joined = yield* Effect.fork(sendTo(server.url, keyed("slow", "k-3")))
      const client = yield* makeClient(server.url)
      const streamed = yield* Effect.fork(collectStream(client, keyed("slow", "k-4")))
      yield* eventually(Effect.sync(() => runs.get("slow") ?? 0), (n) => n === 2)
      // The run goes on once the joiner has its first event: it joined while the run was working.
      const joinedFirst = yield* Deferred.make<void>()
      const streamJoin = yield* Effect.fork(
        collectStream(client, keyed("slow", "k-4"), () => Deferred.unsafeDone(joinedFirst, Exit.void))
      )
      yield* Deferred.await(joinedFirst).pipe(Effect.timeout("10 seconds"))
      yield* Deferred.succeed(gate, undefined)
      const [a, b] = [yield* first.await, yield* joined.await]
      expect(a._tag).toBe("Success")
      const ta = a._tag === "Success" ? a.value : undefined
      const tb = b._tag === "Success" ? b.value : undefined
      expect(tb?.id).toBe(ta?.id)
      expect(tb?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const streamedEvents = yield* streamed.await
      const joinedEvents = yield* streamJoin.await
      expect(streamedEvents._tag).toBe("Success")
      expect(joinedEvents._tag).toBe("Success")
      const events = (exit: typeof joinedEvents) => (exit._tag === "Success" ? exit.value : [])
      // The joiner follows the run as it goes: the task while it works, then its final status.
      const idOf = (event: StreamResponse) =>
        event.payload?.$case === "task"
          ? event.payload.value.id
          : event.payload?.$case === "statusUpdate"
          ? event.payload.value.taskId
          : undefined
      const stateOf = (event: StreamResponse | undefined) =>
        event?.payload?.$case === "task"
          ? event.payload.value.status?.state
          : event?.payload?.$case === "statusUpdate"
          ? event.payload.value.status?.state
          : undefined
      const joinedStream = events(joinedEvents)
      expect(joinedStream.length).toBeGreaterThanOrEqual(2)
      expect(stateOf(joinedStream[0])).toBe(TaskState.TASK_STATE_WORKING)
      expect(stateOf(joinedStream.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED)
      // The first caller's stream ran the task the joiner followed.
      expect(new Set(joinedStream.map(idOf)).size).toBe(1)
      expect(events(streamedEvents).map(idOf)).toContain(idOf(joinedStream[0]!))
      expect(runs.get("slow")).toBe(2) // once per key
    })))

  it.scopedLive("a new key to a task whose run is in progress is refused with -32004, and its key is free again; a repeat of the run's key joins it", () =>
    Effect.provide(
      Effect.gen(function*() {
        const runs = new Map<string, number>()
        const gate = yield* Deferred.make<void>()
        const agent: AgentExecutor.Agent = (request) =>
          Effect.gen(function*() {
            const text = Part.textOf(request.message.parts)
            runs.set(text, (runs.get(text) ?? 0) + 1)
            if (text === "hold") yield* Deferred.await(gate)
            return AgentExecutor.InputRequired({ question: `after ${text}` })
          })
        const server = yield* A2AServer.make({ agent, card, idempotency: {} })
        const paused = yield* sendTo(server.url, keyed("ask", "k-1"))
        expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        const onTask = { taskId: paused.id, contextId: paused.contextId }
        const first = yield* Effect.fork(sendTo(server.url, keyed("hold", "k-2", onTask)))
        yield* eventually(Effect.sync(() => runs.get("hold") ?? 0), (n) => n === 1)
        const repeat = yield* Effect.fork(sendTo(server.url, keyed("hold", "k-2", onTask)))
        const other = keyed("other", "k-3", onTask)
        for (const method of ["SendMessage", "SendStreamingMessage"]) {
          const message = method === "SendMessage" ? other : keyed("other", "k-4", onTask)
          // A repeat while the first is being refused is refused too, not joined to the run of another key.
          const refusals = yield* Effect.all([
            rawSend(server.url, message, method),
            Effect.delay(rawSend(server.url, message, method), "100 millis")
          ], {
            concurrency: 2
          })
          for (const refused of refusals) {
            expect(refused.error?.code).toBe(-32004)
            expect(refused.error?.message).toContain("still running")
          }
        }
        expect(runs.get("other")).toBeUndefined()
        yield* Deferred.succeed(gate, undefined)
        const [ended, joined] = [yield* first.await, yield* repeat.await]
        const endedTask = ended._tag === "Success" ? ended.value : undefined
        expect(endedTask?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        expect(joined._tag === "Success" ? joined.value.status?.message?.messageId : undefined)
          .toBe(endedTask?.status?.message?.messageId)
        expect(runs.get("hold")).toBe(1)
        // The refused key was not recorded: sent again now that the task is paused, it runs.
        const retried = yield* rawSend(server.url, other)
        expect(retried.error).toBeUndefined()
        expect(retried.result?.task?.id).toBe(paused.id)
        expect(runs.get("other")).toBe(1)
      }),
      slowAbandon
    ))

  it.scopedLive("a repeat that joins a request refused before any run gets the same refusal, not an internal error", () =>
    Effect.provide(
      Effect.gen(function*() {
        const runs = new Map<string, number>()
        const server = yield* A2AServer.make({ agent: countingAgent(runs), card, idempotency: {} })
        const done = yield* sendTo(server.url, keyed("book", "k-1"))
        expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        const onTask = { taskId: done.id, contextId: done.contextId }
        for (const [method, key] of [["SendMessage", "k-2"], ["SendStreamingMessage", "k-3"]] as const) {
          // The first is refused (its task has ended) and its entry abandoned 300 ms later; the repeat
          // comes meanwhile, joins the entry, and finds it gone.
          const message = keyed("late", key, onTask)
          const [first, repeat] = yield* Effect.all([
            rawSend(server.url, message, method),
            Effect.delay(rawSend(server.url, message, method), "100 millis")
          ], { concurrency: 2 })
          expect(first.error?.code).toBe(-32004)
          expect(repeat.error).toEqual(first.error)
        }
        expect(runs.get("late")).toBeUndefined()
        expect(runs.get("book")).toBe(1)
      }),
      slowAbandon
    ))

  it.scopedLive("a streaming repeat that follows the run and leaves lets go of the task's event bus at once", () =>
    withLedger(Effect.gen(function*() {
      const listeners = yield* busListeners
      const runs = new Map<string, number>()
      const gate = yield* Deferred.make<void>()
      const server = yield* A2AServer.make({ agent: countingAgent(runs, { gate }), card, idempotency: {} })
      const client = yield* makeClient(server.url)
      const first = yield* Effect.fork(collectStream(client, keyed("slow", "k-5")))
      yield* eventually(Effect.sync(() => runs.get("slow") ?? 0), (n) => n === 1)
      const before = listeners()
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendStreamingMessage",
        params: SendMessageRequest.toJSON({
          tenant: "",
          message: keyed("slow", "k-5"),
          configuration: undefined,
          metadata: {}
        })
      })
      const { head, leave } = yield* openStream(
        `${server.url}/a2a/jsonrpc`,
        body,
        { "A2A-Version": "1.0" },
        "TASK_STATE_WORKING"
      )
      expect(head).toContain("TASK_STATE_WORKING")
      // The SDK's queue of the stream, and the count of what it delivers to that queue (slowReader.ts).
      expect(listeners()).toBe(before + 2)
      leave()
      yield* eventually(Effect.sync(listeners), (count) => count === before)
      yield* Deferred.succeed(gate, undefined)
      const events = yield* first.await
      expect(events._tag).toBe("Success")
      expect(runs.get("slow")).toBe(1)
    })))

  it.scopedLive("the same key with a different payload, or a header that disagrees, is refused with -32602", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const server = yield* A2AServer.make({ agent: countingAgent(runs), card, idempotency: {} })
      const ok = yield* rawSend(server.url, keyed("seat 12A", "k-5"))
      expect(ok.result?.task?.id).toBeTypeOf("string")
      const other = yield* rawSend(server.url, keyed("seat 14C", "k-5"))
      expect(other.error).toMatchObject({ code: -32602, message: "idempotency key reused with a different request" })
      const streamed = yield* rawSend(server.url, keyed("seat 12A", "k-5"), "SendStreamingMessage")
      expect(streamed.error?.code).toBe(IdempotencyLedger.conflictCode)
      const mismatch = yield* Effect.map(
        Effect.promise(async () => {
          const response = await fetch(`${server.url}/a2a/jsonrpc`, {
            method: "POST",
            headers: { "content-type": "application/json", "A2A-Version": "1.0", [Idempotency.headerName]: "k-6" },
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: 1,
              method: "SendMessage",
              params: SendMessageRequest.toJSON({
                tenant: "",
                message: keyed("x", "k-7"),
                configuration: undefined,
                metadata: {}
              })
            })
          })
          return response.json() as Promise<{ error?: { code: number } }>
        }),
        (body) => body.error?.code
      )
      expect(mismatch).toBe(-32602)
      expect(runs.get("seat 12A")).toBe(1)
      expect(runs.get("seat 14C")).toBeUndefined()
      expect(runs.get("x")).toBeUndefined()
    })))

  it.scopedLive("two callers with one key do not see each other's result", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const server = yield* A2AServer.make({
        agent: countingAgent(runs),
        card,
        idempotency: { identity: (headers) => ({ tenant: "", user: String(headers["x-caller"] ?? "") }) }
      })
      const ana = yield* sendTo(server.url, keyed("order", "k-8"), { "x-caller": "ana" })
      const bob = yield* sendTo(server.url, keyed("order", "k-8"), { "x-caller": "bob" })
      const anaAgain = yield* sendTo(server.url, keyed("order", "k-8"), { "x-caller": "ana" })
      expect(bob.id).not.toBe(ana.id)
      expect(anaAgain.id).toBe(ana.id)
      expect(runs.get("order")).toBe(2)
    })))

  for (const streaming of [true, false]) {
    it.scopedLive(
      `returnImmediately (${
        streaming ? "streaming" : "non-streaming"
      } card): answered at once, the entry records the run's end`,
      () =>
        withLedger(Effect.gen(function*() {
          const runs = new Map<string, number>()
          const gate = yield* Deferred.make<void>()
          const server = yield* A2AServer.make({
            agent: countingAgent(runs, { gate }),
            card: { ...card, capabilities: { streaming, pushNotifications: false, extensions: [] } },
            idempotency: { wait: "100 millis" }
          })
          const client = yield* makeClient(server.url)
          const first = yield* sendMessage(client, keyed("later", "k-10"), {}, true)
          expect(first.status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED)
          // While it runs, a repeat gets the same task as it is now.
          const during = yield* sendMessage(
            client,
            { ...keyed("later", "k-10"), messageId: crypto.randomUUID() },
            {},
            true
          )
          expect(during.id).toBe(first.id)
          yield* Deferred.succeed(gate, undefined)
          // Once it ended, a repeat gets its final state, never the early snapshot.
          const after = yield* eventually(
            sendMessage(client, { ...keyed("later", "k-10"), messageId: crypto.randomUUID() }),
            (task) => task.status?.state === TaskState.TASK_STATE_COMPLETED
          )
          expect(after.id).toBe(first.id)
          expect(textOf(after)).toBe("done later")
          expect(runs.get("later")).toBe(1)
        }))
    )
  }

  it.scopedLive("an expired lease ends the task FAILED with an error id, logged with reason interrupted; a repeat gets it", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const runs = new Map<string, number>()
      const ledgerLayer = IdempotencyLedger.layerMemory({ pollInterval: "10 millis" })
      const program = Effect.gen(function*() {
        const ledger = yield* IdempotencyLedger.IdempotencyLedger
        const server = yield* A2AServer.make({
          agent: countingAgent(runs),
          card,
          idempotency: { sweepEvery: "50 millis" }
        })
        // A replica that began the task, saved it WORKING, then died: its lease is never renewed.
        const message = keyed("crash", "k-9")
        const taskId = crypto.randomUUID()
        const begun = yield* ledger.begin({
          key: "k-9",
          identity: IdempotencyLedger.anonymous,
          fingerprint: fingerprintOf(message, "send"),
          taskId,
          lease: "100 millis"
        })
        expect(begun._tag).toBe("Started")
        const { ServerCallContext, UnauthenticatedUser } = yield* Effect.promise(() => import("@a2a-js/sdk/server"))
        const context = new ServerCallContext({ user: new UnauthenticatedUser() })
        yield* Effect.promise(() =>
          server.taskStore.save({
            id: taskId,
            contextId: "ctx-crash",
            artifacts: [],
            history: [],
            metadata: {},
            status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }
          }, context)
        )
        const failed = yield* eventually(
          Effect.promise(() => server.taskStore.load(taskId, context)),
          (task) => task?.status?.state === TaskState.TASK_STATE_FAILED
        )
        const errorId = /error_id: (\w+)/.exec(textOf(failed))?.[1]
        expect(textOf(failed)).toMatch(/^Agent execution failed\. \(error_id: \w+\)$/)
        const logged = logs.lines.find((line) => line.annotations["reason"] === "interrupted")
        expect(logged?.annotations["errorId"]).toBe(errorId)
        expect(logged?.annotations["taskId"]).toBe(taskId)
        const repeat = yield* sendTo(server.url, { ...message, messageId: crypto.randomUUID() })
        expect(repeat.id).toBe(taskId)
        expect(repeat.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        expect(textOf(repeat)).toBe(textOf(failed))
        expect(runs.get("crash")).toBeUndefined()
      })
      yield* program.pipe(Effect.provide(Layer.merge(ledgerLayer, logs.layer)))
    }))

  it.scopedLive("a repeat whose own entry expired gets that entry recorded, however many older ones expired; those are left to the sweep", () =>
    Effect.gen(function*() {
      const runs = new Map<string, number>()
      const program = Effect.gen(function*() {
        const ledger = yield* IdempotencyLedger.IdempotencyLedger
        // No sweep during the test: only the request itself records anything.
        const server = yield* A2AServer.make({
          agent: countingAgent(runs),
          card,
          idempotency: { sweepEvery: "1 hour" }
        })
        const lease = "100 millis"
        const identity = IdempotencyLedger.anonymous
        // Forty replicas' runs with older leases, then ours: a request that recorded the oldest ten at a time missed it.
        for (let i = 0; i < 40; i++) {
          yield* ledger.begin({ key: `other-${i}`, identity, fingerprint: "f", taskId: crypto.randomUUID(), lease })
        }
        yield* Effect.sleep("5 millis")
        const message = keyed("crash", "k-own")
        const taskId = crypto.randomUUID()
        yield* ledger.begin({ key: "k-own", identity, fingerprint: fingerprintOf(message, "send"), taskId, lease })
        yield* Effect.sleep("150 millis")

        const repeat = yield* sendTo(server.url, { ...message, messageId: crypto.randomUUID() })
        expect(repeat.id).toBe(taskId)
        expect(repeat.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        expect(textOf(repeat)).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/)
        expect(runs.get("crash")).toBeUndefined()
        const other = yield* ledger.begin({ key: "other-0", identity, fingerprint: "f", taskId: "unused" })
        expect(other._tag).toBe("Interrupted")
      })
      yield* program.pipe(Effect.provide(IdempotencyLedger.layerMemory({ pollInterval: "10 millis" })))
    }))
})

describe("A2AServer idempotency behind a faulty network", () => {
  const fault: FastCheck.Arbitrary<FaultProxy.Fault> = FastCheck.oneof(
    FastCheck.constant(FaultProxy.Fault.Pass()),
    FastCheck.constant(FaultProxy.Fault.DropAnswer()),
    FastCheck.constant(FaultProxy.Fault.Reset()),
    FastCheck.constant(FaultProxy.Fault.Duplicate()),
    FastCheck.integer({ min: 0, max: 1500 }).map((millis) => FaultProxy.Fault.Delay({ millis }))
  )

  it.scopedLive(
    "every side effect runs at most once per key, exactly once when the call completes, within its budget",
    () =>
      withLedger(Effect.gen(function*() {
        const runs = new Map<string, number>()
        const agent: AgentExecutor.Agent = (request) =>
          Effect.gen(function*() {
            const key = String(request.message.metadata?.[Idempotency.metadataKey] ?? "")
            runs.set(key, (runs.get(key) ?? 0) + 1)
            yield* Effect.sleep("30 millis")
            return AgentExecutor.completedText(`booked ${key}`)
          })
        const server = yield* A2AServer.make({ agent, card, idempotency: {} })
        const runtime = yield* Effect.runtime<Scope.Scope>()
        const callTimeout = 1000
        const budget = 6000
        const outcomes: Array<string> = []
        let run = 0
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(FastCheck.array(fault, { minLength: 1, maxLength: 3 }), async (faults) => {
              const key = `fault-${++run}-${crypto.randomUUID()}`
              const outcome = await Runtime.runPromise(runtime)(Effect.scoped(Effect.gen(function*() {
                // A proxy per run: a fresh origin, so no pooled connection skips the schedule.
                const proxy = yield* FaultProxy.make(() => ({ host: "127.0.0.1", port: server.address.port }))
                proxy.setSchedule(faults)
                const remote = yield* RemoteAgent.make({
                  name: "booking",
                  url: proxy.url,
                  timeout: `${callTimeout} millis`,
                  card: {
                    ...server.card,
                    supportedInterfaces: server.card.supportedInterfaces.map((i) => ({
                      ...i,
                      url: i.url.replace(server.url, proxy.url)
                    }))
                  }
                })
                const started = Date.now()
                const result = yield* remote.send("book flight 4821", { idempotencyKey: key }).pipe(
                  RetryPolicy.retry({
                    maxAttempts: 5,
                    base: "20 millis",
                    cap: "200 millis",
                    budget: `${budget} millis`
                  }, { idempotent: true }),
                  Effect.either
                )
                return { result, elapsed: Date.now() - started }
              })))
              const { elapsed, result } = outcome
              // A bound, not a performance claim: the budget plus one call's time-out and slack.
              expect(elapsed).toBeLessThan(budget + callTimeout + 2000)
              if (result._tag === "Right") {
                expect(result.right._tag).toBe("Completed")
                expect(runs.get(key)).toBe(1)
                outcomes.push("Completed")
              } else {
                expect(result.left).toBeInstanceOf(A2AClientError.A2AClientError)
                expect(runs.get(key) ?? 0).toBeLessThanOrEqual(1)
                outcomes.push(result.left.reason)
              }
            }),
            {
              numRuns: 20,
              interruptAfterTimeLimit: 100_000,
              // The answer lost after the work was done, and a request that arrives twice, always run.
              examples: [
                [[FaultProxy.Fault.DropAnswer()]],
                [[FaultProxy.Fault.Duplicate()]],
                [[FaultProxy.Fault.Reset(), FaultProxy.Fault.DropAnswer(), FaultProxy.Fault.Delay({ millis: 1200 })]]
              ]
            }
          )
        )
        // Duplicated requests may land late: they must still not run anything again.
        yield* Effect.sleep("300 millis")
        for (const [key, count] of runs) expect([key, count]).toEqual([key, 1])
        expect(outcomes).toContain("Completed")
      })),
    { timeout: 180_000 }
  )
})

/** `store`, each save delayed by what `delayOf` says of the task it saves. */
const delayedStore = (store: TaskStore, delayOf: (task: Task) => number): TaskStore => ({
  load: (taskId, context) => store.load(taskId, context),
  list: (params, context) => store.list(params, context),
  save: async (task, context) => {
    const millis = delayOf(task)
    if (millis > 0) await new Promise((resolve) => setTimeout(resolve, millis))
    return store.save(task, context)
  }
})

/** How a scripted run goes: its progress statuses, how long it then works, and how it ends. */
interface Script {
  readonly steps: number
  readonly work: number
  readonly end: "completed" | "failed" | "input"
}

const scriptText = ({ end, steps, work }: Script) => `${steps}:${work}:${end}`

/** Runs the script its message's first text part names (after the key's `|`), counting runs per key. */
const scriptedAgent = (runs: Map<string, number>): AgentExecutor.Agent<Error> => (request) =>
  Effect.gen(function*() {
    const [key = "", script = ""] = Part.textOf(request.message.parts).split("|")
    runs.set(key, (runs.get(key) ?? 0) + 1)
    const [steps, work, end] = script.split(":")
    for (let step = 0; step < Number(steps); step++) yield* AgentExecutor.status(`step ${step}`)
    if (Number(work) > 0) yield* Effect.sleep(Duration.millis(Number(work)))
    if (end === "failed") return yield* Effect.fail(new Error("boom"))
    if (end === "input") return AgentExecutor.InputRequired({ question: "which date?" })
    return AgentExecutor.completedText(`done ${key}`)
  })

const endState = {
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  input: TaskState.TASK_STATE_INPUT_REQUIRED
} as const

/** The entry of `key` of an anonymous caller, once it is recorded (bounded: 10 s). */
const recorded = (key: string) =>
  Effect.flatMap(IdempotencyLedger.IdempotencyLedger, (ledger) =>
    eventually(
      Effect.orDie(ledger.get({ key, identity: { tenant: "", user: "" } })),
      (entry) => Option.isSome(entry) && entry.value.state === "finished",
      1000
    )).pipe(Effect.map((entry) => Option.getOrThrow(entry)))

/** The state of the task an entry records. */
const recordedState = (entry: IdempotencyLedger.Entry) =>
  TaskCodec.fromJSON((Option.getOrThrow(entry.result) as { task: unknown }).task).status?.state

describe("A2AServer idempotency: the entry records the run's end, never a running task (returnImmediately, a store that fails as the run ends)", () => {
  const cardStreaming = (streaming: boolean) => ({
    ...card,
    capabilities: { streaming, pushNotifications: false, extensions: [] }
  })
  const nonStreaming = cardStreaming(false)

  /** A keyed send that returns at once; once its entry is recorded, a repeat (also at once) gets the run's end. */
  const sendsAndRepeats = (client: Client, runs: Map<string, number>, script: Script) =>
    Effect.gen(function*() {
      const key = `retimm-${crypto.randomUUID()}`
      const message = () => ({ ...keyed(`${key}|${scriptText(script)}`, key), messageId: crypto.randomUUID() })
      const first = yield* sendMessage(client, message(), {}, true)
      const entry = yield* recorded(key)
      const again = yield* sendMessage(client, message(), {}, true)
      const expected = endState[script.end]
      expect([recordedState(entry), again.id, again.status?.state]).toEqual([expected, first.id, expected])
      if (script.end === "failed") expect(textOf(again)).toMatch(/error_id: [0-9a-f]{12}/)
      if (script.end === "input") expect(textOf(again)).toBe("which date?")
      if (script.end === "completed") expect(textOf(again)).toBe(`done ${key}`)
      expect(runs.get(key)).toBe(1)
    })

  it.scopedLive(
    "non-streaming card, over save delays (every save or the final one), step counts and endings, memory and SQLite stores",
    () =>
      withLedger(Effect.gen(function*() {
        const runs = new Map<string, number>()
        // What the property sets for its next run: how long each save takes.
        const delays = { every: 0, final: 0 }
        const delayOf = (task: Task) => delays.every + (taskState.isSettled(task.status?.state) ? delays.final : 0)
        const dir = yield* Effect.acquireRelease(
          Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-retimm-"))),
          (made) => Effect.sync(() => Fs.rmSync(made, { recursive: true, force: true }))
        )
        const sqlite = internalStore.toSdk(
          yield* Effect.orDie(
            internalMakeStore.make(A2AServer.TaskStoreConfig.Sqlite({ filename: Path.join(dir, "tasks.db") }))
          ),
          yield* Effect.runtime<never>()
        )
        const clients: Array<Client> = []
        for (const store of [new InMemoryTaskStore(), sqlite]) {
          // The failing runs' lines go to a capture, not the test's output.
          const server = yield* A2AServer.make({
            agent: scriptedAgent(runs),
            card: nonStreaming,
            idempotency: {},
            taskStore: delayedStore(store, delayOf)
          })
            .pipe(Effect.provide(captureLogs().layer))
          clients.push(yield* makeClient(server.url))
        }
        const runtime = yield* Effect.runtime<IdempotencyLedger.IdempotencyLedger>()
        const script: FastCheck.Arbitrary<Script> = FastCheck.record({
          steps: FastCheck.integer({ min: 0, max: 4 }),
          work: FastCheck.constantFrom(0, 0, 20),
          end: FastCheck.constantFrom("completed" as const, "failed" as const, "input" as const)
        })
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(
              script,
              FastCheck.integer({ min: 0, max: 1 }),
              FastCheck.integer({ min: 0, max: 80 }),
              FastCheck.integer({ min: 0, max: 300 }),
              async (script, store, every, final) => {
                delays.every = every
                delays.final = final
                await Runtime.runPromise(runtime)(sendsAndRepeats(clients[store]!, runs, script))
              }
            ),
            {
              numRuns: 24,
              // An agent that ends at once, with the slowest final save; and many statuses behind slow saves.
              examples: [
                [{ steps: 0, work: 0, end: "completed" }, 0, 0, 300],
                [{ steps: 0, work: 0, end: "failed" }, 1, 0, 300],
                [{ steps: 0, work: 0, end: "input" }, 0, 80, 300],
                [{ steps: 4, work: 0, end: "completed" }, 1, 80, 0]
              ]
            }
          )
        )
      })),
    { timeout: 60_000 }
  )

  for (const streaming of [false, true]) {
    const kind = streaming ? "streaming" : "non-streaming"
    it.scopedLive(`${kind} card, a store that cannot be read as the run ends: the entry records the end once it can, never the early answer`, () =>
      withLedger(Effect.gen(function*() {
        const runs = new Map<string, number>()
        const memory = new InMemoryTaskStore()
        // Every read fails for 300 ms after a run's end is saved: a store that fails over just then.
        let downUntil = 0
        const taskStore: TaskStore = {
          load: (taskId, context) =>
            performance.now() < downUntil
              ? Promise.reject(new Error("connection refused"))
              : memory.load(taskId, context),
          list: (params, context) => memory.list(params, context),
          save: async (task, context) => {
            await memory.save(task, context)
            if (taskState.isSettled(task.status?.state)) downUntil = performance.now() + 300
          }
        }
        const server = yield* A2AServer.make({
          agent: scriptedAgent(runs),
          card: cardStreaming(streaming),
          idempotency: {},
          taskStore
        }).pipe(
          Effect.provide(captureLogs().layer)
        )
        const client = yield* makeClient(server.url)
        for (const end of ["completed", "input", "failed"] as const) {
          yield* sendsAndRepeats(client, runs, { steps: 1, work: 0, end })
        }
      })))

    it.scopedLive(`${kind} card, a run whose end the store refuses until the executor gives up: recorded FAILED with an error id, never WORKING`, () =>
      withLedger(Effect.gen(function*() {
        const runs = new Map<string, number>()
        const logs = captureLogs()
        const memory = new InMemoryTaskStore()
        // Takes the run's first states, refuses its end (and the FAILED the SDK then tries) until told.
        const store = { refusing: true }
        const taskStore: TaskStore = {
          load: (taskId, context) => memory.load(taskId, context),
          list: (params, context) => memory.list(params, context),
          save: (task, context) =>
            store.refusing && taskState.isSettled(task.status?.state)
              ? Promise.reject(new Error("connection refused"))
              : memory.save(task, context)
        }
        const server = yield* A2AServer.make({
          agent: scriptedAgent(runs),
          card: cardStreaming(streaming),
          idempotency: {},
          taskStore,
          finalSaveTimeout: "200 millis"
        }).pipe(Effect.provide(logs.layer))
        const client = yield* makeClient(server.url)
        const key = "k-end-refused"
        const message = () => ({ ...keyed(`${key}|1:0:completed`, key), messageId: crypto.randomUUID() })
        const first = yield* sendMessage(client, message(), {}, true)
        expect(taskState.isRunning(first.status?.state)).toBe(true)
        const entry = yield* recorded(key)
        store.refusing = false
        const again = yield* sendMessage(client, message(), {}, true)
        expect([recordedState(entry), again.id, again.status?.state]).toEqual([
          TaskState.TASK_STATE_FAILED,
          first.id,
          TaskState.TASK_STATE_FAILED
        ])
        const errorId = /error_id: ([0-9a-f]{12})/.exec(textOf(again))?.[1]
        expect(errorId).toBeDefined()
        expect(logs.lines.find((line) => line.annotations["errorId"] === errorId)).toMatchObject({
          level: "ERROR",
          annotations: { taskId: first.id, idempotencyKey: key }
        })
        expect(runs.get(key)).toBe(1)
      })))
  }

  it.scopedLive("a blocking send whose end the store refuses for a moment: its caller gets an error, the entry the end the run writes once the store is back", () =>
    withLedger(Effect.gen(function*() {
      const runs = new Map<string, number>()
      const memory = new InMemoryTaskStore()
      // Takes the run's first states, refuses its end (and the FAILED the SDK then tries) for 300 ms.
      let refusingUntil = Number.POSITIVE_INFINITY
      const taskStore: TaskStore = {
        load: (taskId, context) => memory.load(taskId, context),
        list: (params, context) => memory.list(params, context),
        save: (task, context) => {
          if (!taskState.isSettled(task.status?.state)) return memory.save(task, context)
          if (refusingUntil === Number.POSITIVE_INFINITY) refusingUntil = performance.now() + 300
          return performance.now() < refusingUntil
            ? Promise.reject(new Error("connection refused"))
            : memory.save(task, context)
        }
      }
      const server = yield* A2AServer.make({ agent: scriptedAgent(runs), card, idempotency: {}, taskStore }).pipe(
        Effect.provide(captureLogs().layer)
      )
      const key = "k-end-later"
      const message = () => ({ ...keyed(`${key}|1:0:completed`, key), messageId: crypto.randomUUID() })
      const first = yield* rawSend(server.url, message())
      expect(first.error?.code).toBe(-32603)
      const entry = yield* recorded(key)
      const again = yield* sendTo(server.url, message())
      expect([recordedState(entry), again.status?.state, textOf(again)]).toEqual([
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_COMPLETED,
        `done ${key}`
      ])
      expect(runs.get(key)).toBe(1)
    })))
})
