import { SendMessageRequest, type Task, TaskState } from "@a2a-js/sdk"
import { ClientFactory } from "@a2a-js/sdk/client"
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import {
  type AgentExecutionEvent,
  DefaultExecutionEventBus,
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  InMemoryTaskStore,
  RequestContext,
  ServerCallContext,
  type TaskStore,
  UnauthenticatedUser
} from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  ConfigProvider,
  type Context,
  Data,
  Deferred,
  Duration,
  Effect,
  Exit,
  FastCheck,
  Fiber,
  Option,
  Scope,
  type Tracer
} from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as FailureHint from "../src/FailureHint.js"
import { cancelWatchOption, type CancelWatchOptions } from "../src/internal/server/run/cancelWatch.js"
import * as internalMakeStore from "../src/internal/server/store/makeStore.js"
import * as internalSqlCancels from "../src/internal/server/store/sqlCancels.js"
import type * as internalStore from "../src/internal/server/store/store.js"
import { TaskStoreError } from "../src/internal/serverErrors.js"
import * as Part from "../src/Part.js"
import * as RemoteOutcome from "../src/RemoteOutcome.js"
import { leakAgent, type Secret, secretArbitrary } from "./fixtures/leakAgent.js"
import { cardFor } from "./fixtures/peers.js"
import {
  captureLogs,
  eventually,
  makeClient,
  post,
  rpc,
  send,
  textOf,
  untyped,
  userMessage
} from "./fixtures/serverAgents.js"

class PaymentError extends Data.TaggedError("PaymentError")<{ readonly message: string }> {}

/** A typed error with fields but no message: its fields must still reach the server log. */
class PoolExhausted extends Data.TaggedError("PoolExhausted")<{ readonly pool: string; readonly inUse: number }> {}

const failedText = /^Agent execution failed\. \(error_id: ([0-9a-f]{12})\)$/

const card = { name: "test-agent", description: "endings" }

/** Dispatches on the message text; "slow" waits until interrupted. */
const agent = (started?: Deferred.Deferred<void>): AgentExecutor.Agent<PaymentError | PoolExhausted> => (request) =>
  Effect.gen(function*() {
    const text = Part.textOf(request.message.parts)
    switch (text) {
      case "complete":
        yield* AgentExecutor.status("working on it")
        yield* AgentExecutor.data({ step: 1 })
        return AgentExecutor.completedText("done", [
          Part.Artifact.make({
            artifactId: "a1",
            name: "result",
            description: "",
            parts: [Part.TextPart.make({ text: "42" })]
          })
        ])
      case "input":
        return AgentExecutor.InputRequired({ question: "Which account?" })
      case "auth":
        return AgentExecutor.AuthRequired({ text: "Please sign in" })
      case "reject":
        return AgentExecutor.Rejected({ reason: "out of scope" })
      case "fail":
        return yield* new PaymentError({ message: "card 4111 declined" })
      case "pool":
        return yield* new PoolExhausted({ pool: "payments-db", inUse: 20 })
      case "die":
        return yield* Effect.die(new Error("boom"))
      case "interrupt":
        return yield* Effect.interrupt
      case "slow":
        if (started) yield* Deferred.succeed(started, void 0)
        return yield* Effect.never
      default:
        return AgentExecutor.completedText(`echo ${text}`)
    }
  })

const withServer = <A, E>(
  options: Partial<A2AServer.Options<PaymentError, never>>,
  use: (server: Context.Tag.Service<A2AServer.A2AServer>) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const server = yield* A2AServer.make({ agent: agent(), card, ...options })
    return yield* use(server)
  })

describe("AgentExecutor", () => {
  it.scopedLive("the agent reads the caller's message in our types: parts, JSON metadata, the tasks it refers to", () =>
    Effect.gen(function*() {
      const requests: Array<AgentExecutor.AgentRequest> = []
      const server = yield* A2AServer.make({
        card,
        agent: (request) => {
          requests.push(request)
          return Effect.succeed(
            Option.isNone(request.task)
              ? AgentExecutor.InputRequired({ question: "which seat?" })
              : AgentExecutor.completedText("booked")
          )
        }
      })
      const client = yield* makeClient(server.url)
      const first = yield* send(client, "book", {
        contextId: "trip-42",
        referenceTaskIds: ["earlier"],
        metadata: { channel: "web", nested: { attempt: 2 } },
        parts: [
          { content: { $case: "text", value: "book" }, metadata: {}, filename: "", mediaType: "text/plain" },
          {
            content: { $case: "data", value: { flight: "4821", seats: ["12A"] } },
            metadata: {},
            filename: "",
            mediaType: "application/json"
          },
          {
            content: { $case: "url", value: "https://example.com/t.pdf" },
            metadata: {},
            filename: "t.pdf",
            mediaType: "application/pdf"
          },
          {
            content: { $case: "raw", value: Buffer.from("window") },
            metadata: {},
            filename: "note.txt",
            mediaType: "text/plain"
          }
        ]
      })
      expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      yield* send(client, "seat 12A", { taskId: first.id, contextId: "trip-42" })
      const [opening, followUp] = requests
      const message = opening!.message
      expect(message.parts).toEqual([
        Part.TextPart.make({ text: "book" }),
        Part.DataPart.make({ data: { flight: "4821", seats: ["12A"] } }),
        Part.FilePart.make({ url: "https://example.com/t.pdf", mediaType: "application/pdf", filename: "t.pdf" }),
        Part.FilePart.make({ bytes: new TextEncoder().encode("window"), mediaType: "text/plain", filename: "note.txt" })
      ])
      expect(Part.textOf(message.parts)).toBe("book")
      expect(message.metadata).toEqual({ channel: "web", nested: { attempt: 2 } })
      expect(message.referenceTaskIds).toEqual(["earlier"])
      expect(message.messageId).toBe(opening!.sdkMessage.messageId)
      expect(opening).toMatchObject({ taskId: first.id, contextId: "trip-42" })
      expect(followUp).toMatchObject({
        taskId: first.id,
        contextId: "trip-42",
        message: { metadata: {}, referenceTaskIds: [] }
      })
      expect(Part.textOf(followUp!.message.parts)).toBe("seat 12A")
      expect(Option.isNone(opening!.task) && Option.isNone(opening!.sdkTask)).toBe(true)
      // The task it continues, in our types: the state is our name, not the SDK's number.
      const task = Option.getOrThrow(followUp!.task)
      expect(task).toMatchObject({
        id: first.id,
        contextId: "trip-42",
        state: "InputRequired",
        artifacts: [],
        metadata: {}
      })
      expect(Option.map(task.statusMessage, (m) => [m.role, m.parts])).toEqual(
        Option.some(["Agent", [Part.TextPart.make({ text: "which seat?" })]])
      )
      expect(task.history.map((m) => [m.role, m.messageId])).toContainEqual(["User", opening!.sdkMessage.messageId])
      expect(task.history.find((m) => m.role === "User")?.parts).toEqual(message.parts)
      // The SDK's shape only under its own name.
      expect(Option.map(followUp!.sdkTask, (t) => [t.id, t.status?.state])).toEqual(
        Option.some([first.id, TaskState.TASK_STATE_INPUT_REQUIRED])
      )
    }))

  it.scopedLive("every ending reaches a raw SDK client", () =>
    withServer({}, (server) =>
      Effect.gen(function*() {
        const client = yield* makeClient(server.url)
        const completed = yield* send(client, "complete")
        expect(completed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        expect(textOf(completed)).toBe("done")
        expect(completed.artifacts.map((a) => a.artifactId)).toEqual(["a1"])

        const input = yield* send(client, "input")
        expect(input.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        expect(textOf(input)).toBe("Which account?")

        const auth = yield* send(client, "auth")
        expect(auth.status?.state).toBe(TaskState.TASK_STATE_AUTH_REQUIRED)
        expect(textOf(auth)).toBe("Please sign in")

        const rejected = yield* send(client, "reject")
        expect(rejected.status?.state).toBe(TaskState.TASK_STATE_REJECTED)
        expect(textOf(rejected)).toBe("out of scope")

        for (const failing of ["fail", "die", "interrupt"]) {
          const failed = yield* send(client, failing)
          expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED)
          expect(textOf(failed)).toMatch(failedText)
        }
      })))

  it.scopedLive("beforeExecute true cancels before the agent runs; a failing hook fails with an error id", () =>
    Effect.gen(function*() {
      const refused = yield* A2AServer.make({
        agent: agent(),
        card,
        beforeExecute: () => Effect.succeed(true)
      })
      const client = yield* makeClient(refused.url)
      const canceled = yield* send(client, "complete")
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect(canceled.artifacts).toEqual([])

      const failing = yield* A2AServer.make({
        agent: agent(),
        card,
        beforeExecute: () => Effect.fail(new PaymentError({ message: "hook broke" }))
      })
      const failed = yield* send(yield* makeClient(failing.url), "complete")
      expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      expect(textOf(failed)).toMatch(failedText)

      // A hook that throws instead of returning an Effect fails inside the run: its afterExecute still runs.
      let after = 0
      const throwing = yield* A2AServer.make({
        agent: agent(),
        card,
        beforeExecute: () => {
          throw new Error("tenant lookup failed")
        },
        afterExecute: (_request, final) => Effect.sync(() => (after++, final))
      })
      const thrown = yield* send(yield* makeClient(throwing.url), "complete")
      expect(thrown.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      expect(textOf(thrown)).toMatch(failedText)
      expect(after).toBe(1)
    }))

  it.scopedLive("failureHints adds the suffix and the metadata our FailureHint decodes", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent: agent(),
        card,
        afterExecute: AgentExecutor.failureHints((cause) =>
          Cause.isDie(cause) ? { retryable: true } : { retryable: false, contact: "payments-oncall" }
        )
      })
      const client = yield* makeClient(server.url)
      const failed = yield* send(client, "fail")
      const text = textOf(failed)
      const errorId = RemoteOutcome.extractErrorId(text)
      expect(Option.isSome(errorId)).toBe(true)
      expect(text).toBe(
        `Agent execution failed. (error_id: ${Option.getOrThrow(errorId)}) [retryable=false; contact=payments-oncall]`
      )
      const hint = FailureHint.fromMetadata(failed.status?.message?.metadata)
      expect(hint).toEqual(
        Option.some(
          FailureHint.FailureHint.make({
            errorId: Option.getOrThrow(errorId),
            retryable: false,
            contact: "payments-oncall"
          })
        )
      )
      const died = yield* send(client, "die")
      expect(textOf(died)).toMatch(/ \[retryable=true\]$/)
      expect(Option.map(FailureHint.fromMetadata(died.status?.message?.metadata), (h) => h.retryable)).toEqual(
        Option.some(true)
      )
      // Other endings pass through untouched.
      const completed = yield* send(client, "complete")
      expect(textOf(completed)).toBe("done")
    }))

  it.scopedLive("a typed error without a message is logged with its fields, under the error id", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: agent(), card })
      const failed = yield* send(yield* makeClient(server.url), "pool")
      expect(textOf(failed)).toMatch(failedText)
      const errorId = Option.getOrThrow(RemoteOutcome.extractErrorId(textOf(failed)))
      const line = logs.lines.find((l) =>
        l.message === `Runner failed to execute [error_id=${errorId}]` && l.annotations.errorId === errorId
      )
      expect(String(line?.annotations.cause)).toContain(
        "\"_tag\":\"PoolExhausted\",\"pool\":\"payments-db\",\"inUse\":20"
      )
      expect(textOf(failed)).not.toContain("payments-db")
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("a failing afterExecute keeps the original status and logs the hook failure with the error id", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent: agent(),
        card,
        afterExecute: () => Effect.die(new Error("hook exploded"))
      })
      const client = yield* makeClient(server.url)
      const failed = yield* send(client, "fail")
      const errorId = Option.getOrThrow(RemoteOutcome.extractErrorId(textOf(failed)))
      expect(textOf(failed)).toMatch(failedText)
      const hookLine = logs.lines.find((line) =>
        line.message.includes("afterExecute") && line.annotations.errorId === errorId
      )
      expect(String(hookLine?.annotations.cause)).toContain("hook exploded")
      const completed = yield* send(client, "complete")
      expect(completed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("output that is not JSON data fails the run with an error id; nothing of it is stored or sent", () => {
    const logs = captureLogs()
    const cyclic: Record<string, unknown> = { id: 1 }
    cyclic["self"] = cyclic
    const outputs: Record<
      string,
      readonly [Effect.Effect<AgentExecutor.AgentResult, never, AgentExecutor.AgentProgress>, string, string]
    > = {
      bigint: [
        Effect.succeed(
          AgentExecutor.Completed({ parts: [Part.DataPart.make({ data: untyped({ total: 10n }) })], artifacts: [] })
        ),
        "result.parts[0].data.total",
        "a bigint"
      ],
      cycle: [
        Effect.succeed(AgentExecutor.completedText("ok", [
          Part.Artifact.make({
            artifactId: "a",
            name: "",
            description: "",
            parts: [Part.DataPart.make({ data: untyped([cyclic]) })]
          })
        ])),
        "result.artifacts[0].parts[0].data[0].self",
        "a reference to an enclosing value (a cycle)"
      ],
      // A function is what a task store's structuredClone cannot copy: the task stayed WORKING.
      progress: [
        Effect.as(AgentExecutor.data(untyped({ format: () => "x" })), AgentExecutor.completedText("ok")),
        "progress.data.format",
        "a function"
      ],
      map: [
        Effect.as(
          AgentExecutor.artifact(
            Part.Artifact.make({
              artifactId: "a",
              name: "",
              description: "",
              parts: [Part.DataPart.make({ data: untyped(new Map()) })]
            })
          ),
          AgentExecutor.completedText("ok")
        ),
        "progress.artifact.parts[0].data",
        "a Map"
      ],
      // Looks like a plain object (a reactive one, say), but the store's structuredClone refused it: WORKING again.
      proxy: [
        Effect.succeed(
          AgentExecutor.Completed({
            parts: [Part.DataPart.make({ data: untyped({ seats: new Proxy({ free: 2 }, {}) }) })],
            artifacts: []
          })
        ),
        "result.parts[0].data.seats",
        "a Proxy"
      ]
    }
    return Effect.gen(function*() {
      const byText: AgentExecutor.Agent = (request) => {
        return outputs[Part.textOf(request.message.parts)]![0]
      }
      const server = yield* A2AServer.make({ agent: byText, card })
      const client = yield* makeClient(server.url)
      for (const [name, [, path, found]] of Object.entries(outputs)) {
        const failed = yield* send(client, name)
        expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        expect(textOf(failed)).toMatch(failedText)
        expect(failed.artifacts).toEqual([])
        // Stored FAILED, and readable: the bad value never reached the store.
        const stored = yield* Effect.promise(() => client.getTask({ tenant: "", id: failed.id, historyLength: 0 }))
        expect(stored.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        const errorId = Option.getOrThrow(RemoteOutcome.extractErrorId(textOf(failed)))
        const line = logs.lines.find((line) => line.annotations.errorId === errorId)
        expect(line?.message).toBe(`Runner failed to execute [error_id=${errorId}]`)
        expect(String(line?.annotations.cause)).toContain(
          `InvalidOutput: The agent's output is not JSON data at ${path}: ${found}`
        )
      }
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("an afterExecute hook whose status is not JSON data is a failing hook: the original status is kept", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent: agent(),
        card,
        afterExecute: (_, final) =>
          Effect.succeed({ ...final, event: { ...final.event, metadata: { at: new Date(0) } } })
      })
      const completed = yield* send(yield* makeClient(server.url), "complete")
      expect(completed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(textOf(completed)).toBe("done")
      const hookLine = logs.lines.find((line) => line.message.includes("afterExecute"))
      expect(String(hookLine?.annotations.cause)).toContain("not JSON data at afterExecute.event.metadata.at: a Date")
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("an afterExecute that throws, returns a state that is not final, or runs too long keeps the original status", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const hooks: ReadonlyArray<readonly [AgentExecutor.Hooks["afterExecute"], string]> = [
        [() => {
          throw new Error("hook threw")
        }, "hook threw"],
        [
          (_, final) =>
            Effect.succeed({
              ...final,
              event: { ...final.event, status: { ...final.event.status!, state: TaskState.TASK_STATE_WORKING } }
            }),
          "TASK_STATE_WORKING, which is not final"
        ],
        [() => Effect.never, "afterExecute did not finish within 200ms"]
      ]
      for (const [afterExecute, logged] of hooks) {
        const server = yield* A2AServer.make({ agent: agent(), card, afterExecute, afterExecuteTimeout: "200 millis" })
        const client = yield* makeClient(server.url)
        const completed = yield* send(client, "complete")
        expect(completed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        const failed = yield* send(client, "fail")
        expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        const errorId = Option.getOrThrow(RemoteOutcome.extractErrorId(textOf(failed)))
        const hookLine = logs.lines.find((line) =>
          line.message.includes("afterExecute") && line.annotations.errorId === errorId
        )
        expect(String(hookLine?.annotations.cause)).toContain(logged)
      }
    }).pipe(Effect.provide(logs.layer))
  })

  it.live("a hanging afterExecute does not hold a cancel or a shutdown: the task ends, nothing stays WORKING", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(
        A2AServer.make({ agent: agent(), card, afterExecute: () => Effect.never, shutdownTimeout: "200 millis" }),
        scope
      )
      const client = yield* makeClient(server.url)
      const toCancel = yield* send(client, "complete", {}, true)
      const canceled = yield* Effect.promise(() => client.cancelTask({ tenant: "", id: toCancel.id, metadata: {} }))
        .pipe(
          Effect.timeoutFail({ duration: "3 seconds", onTimeout: () => new Error("cancel waited for the hook") })
        )
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      const pending = yield* send(client, "complete", {}, true)
      // A run still in its agent when the shutdown comes is settled without the hook.
      const inAgent = yield* send(client, "slow", {}, true)
      const closedIn = yield* Scope.close(scope, Exit.void).pipe(
        Effect.timed,
        Effect.map(([duration]) => Duration.toMillis(duration))
      )
      expect(closedIn).toBeLessThan(3000)
      const context = new (yield* Effect.promise(() => import("@a2a-js/sdk/server"))).ServerCallContext()
      for (const task of [pending, inAgent]) {
        const stored = yield* Effect.promise(() => server.taskStore.load(task.id, context))
        expect(stored?.status?.state).toBe(TaskState.TASK_STATE_FAILED)
        expect(textOf(stored)).toMatch(failedText)
      }
    }))

  it.scopedLive("a second shutdown waits for the first instead of starting over with its own deadline", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({
        agent: () => Effect.as(Effect.sleep("400 millis"), AgentExecutor.completedText("done")),
        card
      })
      const client = yield* makeClient(server.url)
      const running = yield* send(client, "slow", {}, true)
      const first = yield* Effect.fork(server.executor.shutdown("10 seconds"))
      yield* Effect.sleep("50 millis")
      // Started over, a deadline of zero would interrupt the run at once: it would end FAILED.
      yield* server.executor.shutdown(Duration.zero)
      expect(yield* server.executor.running).toBe(0)
      yield* Fiber.join(first)
      const context = new (yield* Effect.promise(() => import("@a2a-js/sdk/server"))).ServerCallContext()
      const stored = yield* eventually(
        Effect.promise(() => server.taskStore.load(running.id, context)),
        (task) => task?.status?.state !== TaskState.TASK_STATE_WORKING
      )
      expect(stored?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    }))

  it.scopedLive("cancel: running task ends CANCELED, finished -32002, unknown -32001, message to FAILED -32004", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const server = yield* A2AServer.make({ agent: agent(started), card })
      const client = yield* makeClient(server.url)
      const submitted = yield* send(client, "slow", {}, true)
      yield* Deferred.await(started)
      const canceled = yield* Effect.promise(() => client.cancelTask({ tenant: "", id: submitted.id, metadata: {} }))
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      const stored = yield* Effect.promise(() => client.getTask({ tenant: "", id: submitted.id }))
      expect(stored.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect(yield* server.executor.running).toBe(0)

      const completed = yield* send(client, "complete")
      const finished = yield* rpc(server.rpcUrl, "CancelTask", { id: completed.id })
      expect(JSON.parse(finished.text).error.code).toBe(-32002)
      const clientError = yield* Effect.promise(() =>
        client.cancelTask({ tenant: "", id: completed.id, metadata: {} }).then(() => undefined, (e: unknown) => e)
      )
      expect((clientError as Error).name).toBe("TaskNotCancelableError")

      const unknown = yield* rpc(server.rpcUrl, "CancelTask", { id: crypto.randomUUID() })
      expect(JSON.parse(unknown.text).error.code).toBe(-32001)

      const failed = yield* send(client, "fail")
      const followUp = yield* rpc(server.rpcUrl, "SendMessage", {
        message: {
          messageId: crypto.randomUUID(),
          taskId: failed.id,
          contextId: failed.contextId,
          role: "ROLE_USER",
          parts: [{ text: "again" }]
        }
      })
      expect(JSON.parse(followUp.text).error.code).toBe(-32004)
    }))

  it.scopedLive("cancel of a task waiting for input ends CANCELED; a follow-up turn runs the agent again", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: agent(), card })
      const client = yield* makeClient(server.url)
      const waiting = yield* send(client, "input")
      const next = yield* send(client, "complete", { taskId: waiting.id, contextId: waiting.contextId })
      expect(next.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const again = yield* send(client, "input")
      const canceled = yield* Effect.promise(() => client.cancelTask({ tenant: "", id: again.id, metadata: {} }))
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    }))

  it.scopedLive("a stream that pauses (auth or input required) ends", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: agent(), card })
      const client = yield* makeClient(server.url)
      // Every event until the server ends the stream; a stream left open fails the test instead of hanging it.
      const drain = (events: () => AsyncGenerator<{ readonly payload?: unknown }>) =>
        Effect.promise(async () => {
          const seen: Array<unknown> = []
          for await (const event of events()) seen.push(event.payload)
          return seen.length
        }).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the stream stayed open" }))
      for (const text of ["auth", "input"]) {
        const streamed = yield* drain(() =>
          client.sendMessageStream({ tenant: "", message: userMessage(text), configuration: undefined, metadata: {} })
        )
        expect(streamed).toBeGreaterThan(0)
      }
    }))

  it.scopedLive("ADK_DEBUG_ERRORS (any case) appends the error name and message; a tagged error without one, its fields", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: agent(), card })
      const client = yield* makeClient(server.url)
      const failed = yield* send(client, "fail")
      expect(textOf(failed)).toMatch(
        /^Agent execution failed\. \(error_id: [0-9a-f]{12}\): PaymentError: card 4111 declined$/
      )
      const pool = yield* send(client, "pool")
      expect(textOf(pool)).toMatch(
        /^Agent execution failed\. \(error_id: [0-9a-f]{12}\): PoolExhausted: \{"pool":"payments-db","inUse":20\}$/
      )
    }).pipe(Effect.withConfigProvider(ConfigProvider.fromJson({ ADK_DEBUG_ERRORS: "TrUe" }))))

  it.scopedLive("debug detail in production fails the build unless allowed, which logs a warning", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const refused = yield* Effect.exit(A2AServer.make({ agent: agent(), card }))
      expect(Exit.isFailure(refused)).toBe(true)
      if (Exit.isFailure(refused)) {
        const error = Cause.failureOption(refused.cause)
        expect(Option.map(error, (e) => e._tag)).toEqual(Option.some("ConfigurationError"))
        expect(Option.map(error, (e) => (e as AgentExecutor.ConfigurationError).reason)).toEqual(
          Option.some("DebugErrorsInProduction")
        )
      }
      yield* A2AServer.make({ agent: agent(), card, allowDebugErrorsInProduction: true })
      expect(logs.lines.some((line) => line.level === "WARN" && line.message.includes("ADK_DEBUG_ERRORS"))).toBe(true)
    }).pipe(
      Effect.withConfigProvider(ConfigProvider.fromJson({ ADK_DEBUG_ERRORS: "1", NODE_ENV: "production" })),
      Effect.provide(logs.layer)
    )
  })

  it.scopedLive("a stream dropped mid-run keeps every artifact of the run in the stored task", () =>
    Effect.gen(function*() {
      const artifact = (artifactId: string) =>
        Part.Artifact.make({ artifactId, name: "", description: "", parts: [Part.TextPart.make({ text: artifactId })] })
      const stepwise: AgentExecutor.Agent = () =>
        AgentExecutor.status("started").pipe(
          Effect.zipRight(Effect.sleep("300 millis")),
          Effect.zipRight(AgentExecutor.artifact(artifact("progress"))),
          Effect.as(AgentExecutor.completedText("late", [artifact("result")]))
        )
      const server = yield* A2AServer.make({ agent: stepwise, card })
      // A caller that goes away after the first event, its socket closed.
      const taskId = yield* Effect.async<string>((resume) => {
        const request = http.request(server.rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json", "A2A-Version": "1.0" }
        }, (response) => {
          response.once("data", (chunk) => {
            request.destroy()
            resume(Effect.succeed(/"id":"([0-9a-f-]{36})"/.exec(String(chunk))?.[1] ?? ""))
          })
        })
        const params = SendMessageRequest.toJSON({
          tenant: "",
          message: userMessage("go"),
          configuration: undefined,
          metadata: {}
        })
        request.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendStreamingMessage", params }))
      })
      expect(taskId).not.toBe("")
      const client = yield* makeClient(server.url)
      const done = yield* eventually(
        Effect.promise(() => client.getTask({ tenant: "", id: taskId })),
        (task: Task) => task.status?.state === TaskState.TASK_STATE_COMPLETED
      )
      expect(done.artifacts.map((a) => a.artifactId)).toEqual(["progress", "result"])
    }))

  it.scopedLive("a task never stays WORKING when its stream is dropped", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const server = yield* A2AServer.make({
        agent: () => Effect.as(Deferred.await(release), AgentExecutor.completedText("late")),
        card
      })
      const client = yield* makeClient(server.url)
      const controller = new AbortController()
      const first = yield* Effect.promise(async () => {
        const stream = client.sendMessageStream(
          {
            tenant: "",
            message: (await import("./fixtures/serverAgents.js")).userMessage("x"),
            configuration: undefined,
            metadata: {}
          },
          { signal: controller.signal }
        )
        const next = await stream.next()
        controller.abort()
        return next.value
      })
      const taskId = first?.payload?.$case === "task" ? first.payload.value.id : ""
      expect(taskId).not.toBe("")
      yield* Deferred.succeed(release, void 0)
      const done = yield* eventually(
        Effect.promise(() => client.getTask({ tenant: "", id: taskId })),
        (task: Task) => task.status?.state === TaskState.TASK_STATE_COMPLETED
      )
      expect(textOf(done)).toBe("late")
    }))

  // An in-memory store whose calls take `delay`, and fail while `down` is set.
  const flakyStore = (delay: Duration.DurationInput) => {
    const memory = new InMemoryTaskStore()
    const state = { down: false }
    const call = <A>(run: () => Promise<A>) =>
      new Promise((resolve) => setTimeout(resolve, Duration.toMillis(delay))).then(() => {
        if (state.down) throw new Error("connection refused")
        return run()
      })
    const store: TaskStore = {
      save: (task, context) => call(() => memory.save(task, context)),
      load: (taskId, context) => call(() => memory.load(taskId, context)),
      list: (params, context) => memory.list(params, context)
    }
    return { store, state, memory }
  }

  it.scopedLive("on a slow store every progress status of a run is kept: the final state is not written ahead of them", () =>
    Effect.gen(function*() {
      const { store } = flakyStore("2 millis")
      const steps: AgentExecutor.Agent = () =>
        Effect.forEach(Array.from({ length: 60 }, (_, i) => i), (i) => AgentExecutor.status(`step ${i}`), {
          discard: true
        }).pipe(
          Effect.as(AgentExecutor.completedText("done"))
        )
      const server = yield* A2AServer.make({ agent: steps, card, taskStore: store })
      const client = yield* makeClient(server.url)
      const answer = yield* send(client, "go")
      const progress = (task: Task) =>
        (task.history ?? []).filter((message) => JSON.stringify(message).includes("step ")).length
      expect([answer.status?.state, progress(answer)]).toEqual([TaskState.TASK_STATE_COMPLETED, 60])
      const stored = yield* Effect.promise(() => client.getTask({ tenant: "", id: answer.id }))
      expect([stored.status?.state, progress(stored)]).toEqual([TaskState.TASK_STATE_COMPLETED, 60])
    }))

  it.scopedLive("a store that is down when a run ends is retried until it is back: the task ends, it does not stay WORKING", () =>
    Effect.gen(function*() {
      const { memory, state, store } = flakyStore(0)
      const release = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const server = yield* A2AServer.make({
        agent: () =>
          Deferred.succeed(started, void 0).pipe(
            Effect.zipRight(Deferred.await(release)),
            Effect.as(AgentExecutor.completedText("kept"))
          ),
        card,
        taskStore: store
      })
      const client = yield* makeClient(server.url)
      const answer = yield* Effect.fork(
        Effect.promise(() =>
          client.sendMessage({ tenant: "", message: userMessage("go"), configuration: undefined, metadata: {} }).then(
            () => "answered",
            () => "failed"
          )
        )
      )
      yield* Deferred.await(started)
      state.down = true
      yield* Deferred.succeed(release, void 0)
      yield* Effect.sleep("400 millis")
      state.down = false
      // The caller's own answer could not be saved; the run's end is written once the store is back.
      expect(yield* Fiber.join(answer)).toBe("failed")
      const context = new ServerCallContext({ user: new UnauthenticatedUser() })
      const tasks = yield* eventually(
        Effect.promise(() =>
          memory.list({
            tenant: "",
            contextId: "",
            status: 0,
            pageSize: 10,
            pageToken: "",
            historyLength: 0,
            statusTimestampAfter: undefined,
            includeArtifacts: false
          }, context)
        ),
        (listed) => listed.tasks.length === 1 && listed.tasks[0]?.status?.state === TaskState.TASK_STATE_COMPLETED
      )
      expect(textOf(tasks.tasks[0])).toBe("kept")
    }))

  // A run ends while the store is down, then the server shuts down: the shutdown returns within `bound`, and
  // makes no store call after it. The final save it gave up on is logged with the task's ids.
  const shutdownWithStoreDown = (agent: AgentExecutor.Agent, bound: Duration.DurationInput) => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const { state, store } = flakyStore(0)
      const after = { stopped: false, calls: 0 }
      const counted: TaskStore = {
        save: (task, context) => {
          if (after.stopped) after.calls++
          return store.save(task, context)
        },
        load: (taskId, context) => {
          if (after.stopped) after.calls++
          return store.load(taskId, context)
        },
        list: (params, context) => store.list(params, context)
      }
      const scope = yield* Scope.make()
      const server = yield* A2AServer.make({ agent, card, taskStore: counted, shutdownTimeout: "300 millis" }).pipe(
        Scope.extend(scope),
        Effect.provide(logs.layer)
      )
      const answer = yield* rpc(
        server.rpcUrl,
        "SendMessage",
        SendMessageRequest.toJSON({
          tenant: "",
          message: userMessage("go"),
          configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
          metadata: {}
        })
      )
      const taskId = (JSON.parse(answer.text) as { result: { task: { id: string } } }).result.task.id
      state.down = true
      yield* Effect.sleep("300 millis")
      const started = Date.now()
      yield* Scope.close(scope, Exit.void)
      after.stopped = true
      expect(Date.now() - started).toBeLessThan(Duration.toMillis(bound))
      yield* Effect.sleep("500 millis")
      expect(after.calls).toBe(0)
      expect(logs.lines.find((line) => line.message.includes("before the server shut down"))?.annotations)
        .toMatchObject({ taskId })
    })
  }

  it.live("a shutdown stops waiting for a store that is down at its deadline: no store call after it, the task's ids logged", () =>
    shutdownWithStoreDown(
      () => Effect.as(Effect.sleep("100 millis"), AgentExecutor.completedText("done")),
      "3 seconds"
    ))

  it.live("so does the final save of a run the shutdown could not interrupt, ended without it", () =>
    shutdownWithStoreDown(
      () => Effect.as(Effect.uninterruptible(Effect.sleep("12 seconds")), AgentExecutor.completedText("late")),
      "12 seconds"
    ))

  it.scopedLive("a custom store that throws instead of rejecting does not hold the run: it ends within the usual wait", () =>
    Effect.gen(function*() {
      const memory = new InMemoryTaskStore()
      let thrown = 0
      const store: TaskStore = {
        load: (taskId, context) => memory.load(taskId, context),
        list: (params, context) => memory.list(params, context),
        save: (task, context) => {
          if (thrown === 0 && task.status?.state === TaskState.TASK_STATE_COMPLETED) {
            thrown++
            throw new Error("refused")
          }
          return memory.save(task, context)
        }
      }
      const server = yield* A2AServer.make({
        agent: () => Effect.succeed(AgentExecutor.completedText("done")),
        card,
        taskStore: store
      })
      yield* rpc(
        server.rpcUrl,
        "SendMessage",
        SendMessageRequest.toJSON({ tenant: "", message: userMessage("go"), configuration: undefined, metadata: {} })
      )
      expect(thrown).toBe(1)
      // 200 checks 10 ms apart: well under the 30 s a run waits for a store call that never ends.
      yield* eventually(server.executor.running, (running) => running === 0)
    }))

  it.scopedLive("leak property: no secret in any byte the client receives; the log line with the error id has it", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const secrets = new Map<string, Secret>()
      const server = yield* A2AServer.make({ agent: leakAgent(secrets), card })
      const grpc = yield* Effect.promise(() =>
        new ClientFactory({ transports: [new GrpcTransportFactory()] }).createFromUrl(server.url)
      )
      const samples = FastCheck.sample(secretArbitrary, 30)
      for (const sample of samples) {
        const token = crypto.randomUUID()
        secrets.set(token, sample)
        const message = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: token }] }
        const blocking = yield* rpc(server.rpcUrl, "SendMessage", { message })
        const task = JSON.parse(blocking.text).result.task
        expect(task.status.state).toBe("TASK_STATE_FAILED")
        const streamed = yield* post(
          server.rpcUrl,
          JSON.stringify({
            jsonrpc: "2.0",
            id: 2,
            method: "SendStreamingMessage",
            params: { message: { ...message, messageId: crypto.randomUUID() } }
          }),
          { "A2A-Version": "1.0" }
        )
        expect(streamed.text).toContain("TASK_STATE_FAILED")
        const fetched = yield* rpc(server.rpcUrl, "GetTask", { id: task.id })
        const legacy = yield* post(
          server.rpcUrl,
          JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tasks/get", params: { id: task.id } })
        )
        // The same over HTTP+JSON.
        const restUrl = server.urls["HTTP+JSON"]!
        const restMessage = (messageId: string) => JSON.stringify({ message: { ...message, messageId } })
        const restSent = yield* post(`${restUrl}/message:send`, restMessage(crypto.randomUUID()), {
          "A2A-Version": "1.0"
        })
        expect(JSON.parse(restSent.text).task.status.state).toBe("TASK_STATE_FAILED")
        const restStreamed = yield* post(`${restUrl}/message:stream`, restMessage(crypto.randomUUID()), {
          "A2A-Version": "1.0"
        })
        expect(restStreamed.text).toContain("TASK_STATE_FAILED")
        const restFetched = yield* Effect.promise(() =>
          fetch(`${restUrl}/tasks/${task.id}`, { headers: { "A2A-Version": "1.0" } }).then((response) =>
            response.text()
          )
        )
        expect(JSON.parse(restFetched).status.state).toBe("TASK_STATE_FAILED")
        // And over gRPC, through the SDK's client, every event of a stream included.
        const grpcMessage = () => ({ tenant: "", message: userMessage(token), configuration: undefined, metadata: {} })
        const grpcSent = yield* Effect.promise(() => grpc.sendMessage(grpcMessage()))
        expect((grpcSent as Task).status?.state).toBe(TaskState.TASK_STATE_FAILED)
        const grpcStreamed = yield* Effect.promise(async () => {
          const events: Array<unknown> = []
          for await (const event of grpc.sendMessageStream(grpcMessage())) events.push(event)
          return events
        })
        const grpcFetched = yield* Effect.promise(() =>
          grpc.getTask({ tenant: "", id: task.id, historyLength: undefined })
        )
        const grpcTexts = [grpcSent, grpcStreamed, grpcFetched].map((received) =>
          JSON.stringify(received, (_key, value) => typeof value === "bigint" ? String(value) : value)
        )
        expect(grpcTexts[1]).toContain("error_id")
        for (
          const received of [
            blocking.text,
            streamed.text,
            fetched.text,
            legacy.text,
            restSent.text,
            restStreamed.text,
            restFetched,
            ...grpcTexts
          ]
        ) {
          expect(received).not.toContain(sample.secret)
        }
        const errorId = Option.getOrThrow(RemoteOutcome.extractErrorId(task.status.message.parts[0].text))
        const line = logs.lines.find((l) => l.annotations.errorId === errorId)
        expect(line?.message).toBe(`Runner failed to execute [error_id=${errorId}]`)
        expect(line?.annotations.taskId).toBe(task.id)
        expect(String(line?.annotations.cause)).toContain(sample.secret)
      }
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive("with debug detail on, the error name and message do reach the client", () =>
    Effect.gen(function*() {
      const secrets = new Map<string, Secret>()
      const server = yield* A2AServer.make({ agent: leakAgent(secrets), card })
      const client = yield* makeClient(server.url)
      for (const sample of FastCheck.sample(secretArbitrary, 10)) {
        const token = crypto.randomUUID()
        secrets.set(token, sample)
        const failed = yield* send(client, token)
        const text = textOf(failed)
        expect(text).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]{12}\): /)
        const expectedName =
          { message: "PaymentError", nested: "Error", defect: "Error", parse: "ParseError" }[sample.kind]
        expect(text).toContain(`: ${expectedName}: `)
        if (sample.kind !== "nested") expect(text).toContain(sample.secret)
      }
    }).pipe(Effect.withConfigProvider(ConfigProvider.fromJson({ ADK_DEBUG_ERRORS: "1" }))))
})

describe("AgentExecutor, driven by the SDK's interface directly", () => {
  const callerTrace = "0af7651916cd43dd8448eb211c80319c"
  const callerSpan = "b7ad6b7169203331"
  const contextFor = (text: string) =>
    new RequestContext(
      { tenant: "", message: userMessage(text), configuration: undefined, metadata: undefined },
      crypto.randomUUID(),
      crypto.randomUUID(),
      defaultServerCallContextBuilder({
        extensions: undefined,
        user: new UnauthenticatedUser(),
        headers: { "content-type": "application/json", traceparent: `00-${callerTrace}-${callerSpan}-01` }
      })
    )
  const recording = () => {
    const bus = new DefaultExecutionEventBus()
    const events: Array<AgentExecutionEvent> = []
    bus.on("event", (event) => events.push(event))
    const states = () =>
      events.map((event) =>
        event.kind === "task" || event.kind === "statusUpdate" ? event.data.status?.state : event.kind
      )
    return { bus, states }
  }

  it.scoped("an agent that never waits has its final status out when execute returns, as a plain SDK executor has", () =>
    Effect.gen(function*() {
      const executor = yield* AgentExecutor.make(agent())
      for (
        const [text, final] of [["echo", TaskState.TASK_STATE_COMPLETED], [
          "fail",
          TaskState.TASK_STATE_FAILED
        ]] as const
      ) {
        const { bus, states } = recording()
        const done = executor.execute(contextFor(text), bus)
        // Nothing awaited yet: both events were published within the call.
        expect(states()).toEqual([TaskState.TASK_STATE_WORKING, final])
        yield* Effect.promise(() => done)
      }
    }))

  it.scopedLive("an agent that waits ends the same way, after execute has returned", () =>
    Effect.gen(function*() {
      const executor = yield* AgentExecutor.make(() =>
        Effect.as(Effect.sleep("5 millis"), AgentExecutor.completedText("later"))
      )
      const { bus, states } = recording()
      const done = executor.execute(contextFor("echo"), bus)
      expect(states()).toEqual([TaskState.TASK_STATE_WORKING])
      yield* Effect.promise(() => done)
      expect(states()).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED])
    }))

  it.scoped("with Effect's default tracer the agent runs in the run's span, a child of the caller's named by traceparent", () =>
    Effect.gen(function*() {
      let seen: Tracer.Span | undefined
      let inner: Tracer.Span | undefined
      const executor = yield* AgentExecutor.make(() =>
        Effect.gen(function*() {
          seen = yield* Effect.currentSpan
          inner = yield* Effect.currentSpan.pipe(Effect.withSpan("agent.step"))
          return AgentExecutor.completedText("traced")
        }).pipe(Effect.orDie)
      )
      const { bus } = recording()
      yield* Effect.promise(() => executor.execute(contextFor("echo"), bus))
      expect(seen?.name).toBe("A2AServer.execute")
      expect(seen?.traceId).toBe(callerTrace)
      expect(Option.map(seen!.parent, (parent) => parent.spanId)).toEqual(Option.some(callerSpan))
      expect(inner?.traceId).toBe(callerTrace)
      expect(Option.map(inner!.parent, (parent) => parent.spanId)).toEqual(Option.some(seen!.spanId))
      expect(seen?.status._tag).toBe("Ended")
    }))

  it.scoped("under a handler that keeps a paused task's bus open, a cancel ends it CANCELED in its own context", () =>
    Effect.gen(function*() {
      const executor = yield* AgentExecutor.make(agent())
      // The SDK's default: paused tasks' buses stay open, and a cancel reaches the executor.
      const handler = new DefaultRequestHandler(cardFor("http://127.0.0.1/unused"), new InMemoryTaskStore(), executor)
      const context = new ServerCallContext()
      const paused = (yield* Effect.promise(() =>
        handler.sendMessage(
          { tenant: "", message: userMessage("input"), configuration: undefined, metadata: {} },
          context
        )
      )) as Task
      expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      const canceled = yield* Effect.promise(() =>
        handler.cancelTask({ tenant: "", id: paused.id, metadata: {} }, context)
      )
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      expect(canceled.status?.message?.contextId).toBe(paused.contextId)
    }))

  it.scopedLive("a cancel another server appended stops the run when the store's feed tells it: not before the store says CANCELED, through a store that fails a while, and for a run that starts after the notice", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-cancels-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      // The feed the SQLite store of this process tells, and the store it reads when told (one in memory here).
      const cancels = internalSqlCancels.sqlite(path.join(dir, "tasks.db"))
      const inner = yield* internalMakeStore.make({ _tag: "Unbounded" })
      let reads = 0
      let failing = false
      const store: internalStore.TaskStore = {
        ...inner,
        get: (taskId, context) =>
          Effect.suspend(() => {
            reads++
            return failing
              ? Effect.fail(new TaskStoreError({ reason: "Connection", message: "lost" }))
              : inner.get(taskId, context)
          })
      }
      const options: AgentExecutor.Options & CancelWatchOptions = { [cancelWatchOption]: { feed: cancels.feed, store } }
      const executorScope = yield* Scope.make()
      const executor = yield* Scope.extend(
        AgentExecutor.make(() => Effect.as(Effect.never, AgentExecutor.completedText("never")), options),
        executorScope
      ).pipe(Effect.provide(logs.layer))
      const context = contextFor("wait")
      const key = cancels.feed.keyOf(context.taskId, context.context)
      const first = recording()
      const done = executor.execute(context, first.bus)
      // Told while the store still says WORKING: read, and the run goes on.
      yield* Effect.promise(() =>
        store.append(context.taskId, [{
          kind: "task",
          data: {
            id: context.taskId,
            contextId: context.contextId,
            status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
            artifacts: [],
            history: [],
            metadata: {}
          }
        }], context.context).pipe(Effect.runPromise)
      )
      cancels.told?.(key)
      yield* eventually(Effect.sync(() => reads), (n) => n >= 1)
      yield* Effect.sleep("100 millis")
      expect(first.states().at(-1)).toBe(TaskState.TASK_STATE_WORKING)
      // Canceled, told, and the store failing a while: read again until it answers.
      yield* inner.append(context.taskId, [{
        kind: "statusUpdate",
        data: {
          taskId: context.taskId,
          contextId: context.contextId,
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
          metadata: {}
        }
      }], context.context)
      failing = true
      const before = reads
      cancels.told?.(key)
      yield* eventually(Effect.sync(() => reads), (n) => n >= before + 2)
      expect(first.states().at(-1)).toBe(TaskState.TASK_STATE_WORKING)
      failing = false
      yield* Effect.promise(() => done).pipe(Effect.timeout("5 seconds"))
      expect(first.states().at(-1)).toBe(TaskState.TASK_STATE_CANCELED)
      expect(logs.lines.filter((line) => line.message.includes("Could not read the task's state"))).toHaveLength(1)
      // A run of the task that starts after the notice (a paused task continued here meanwhile) is read at once.
      const second = recording()
      yield* Effect.promise(() => executor.execute(context, second.bus)).pipe(Effect.timeout("5 seconds"))
      expect(second.states().at(-1)).toBe(TaskState.TASK_STATE_CANCELED)
      // Once the executor's scope closes, it follows the feed no more.
      yield* Scope.close(executorScope, Exit.void)
      const after = reads
      cancels.told?.(key)
      yield* Effect.sleep("100 millis")
      expect(reads).toBe(after)
    }))
})
