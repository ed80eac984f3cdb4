/**
 * Every check the SDK's `DefaultRequestHandler` makes today (issue #43: its
 * replacement keeps each, with a test), on a real server (127.0.0.1, port 0)
 * through the SDK's raw clients of all three transports. Each test asserts
 * the error's reason and the transport's code, as the error table says, or
 * the state or field the check decides. A refusal is made before the agent
 * runs: the tests that refuse a message also check that nothing ran.
 *
 * The list, read from `@a2a-js/sdk` 1.3.0 `dist/server/index.js` (lines
 * given), each check with the test that covers it: "here" is this file's
 * test of that name; others name their file and test. Spec: A2A 1.0.1.
 *
 * _createRequestContext (2766), for SendMessage and SendStreamingMessage:
 * - message required (2768): never reached, the messageId check comes first;
 *   errorTable.test.ts "InvalidParams: provoked on a server..." sends none.
 * - input modes (_validateInputModes, 2753): NOT MADE TODAY. The SDK makes it only
 *   with `validateInputModes: true` (2721), which the server does not pass
 *   (caller/headers.ts); AgentExecutor.test.ts "the agent reads the caller's
 *   message..." sends an application/json part to a text/plain card and is
 *   served. Spec §3.1.1 lists ContentTypeNotSupportedError for it.
 * - required extensions (2775): SendMessage in errorTable.test.ts
 *   "ExtensionSupportRequired: ..." and conformance.test.ts "--require-extension
 *   refuses ..."; streamed: here, "a required extension the message does not
 *   declare is EXTENSION_SUPPORT_REQUIRED when streamed too; nothing runs".
 * - blank taskId (_requireValidTaskId, 2784): here, "a message whose taskId is
 *   blank is INVALID_PARAMS, not TASK_NOT_FOUND; nothing runs".
 * - unknown taskId (2786, spec §3.4.2 MUST): here, "a message naming a task that
 *   does not exist is TASK_NOT_FOUND, sent or streamed; nothing runs"; another
 *   caller's task: A2AServer.auth.test.ts "... another caller gets TaskNotFound
 *   on every operation and transport ...".
 * - terminal task (2789, spec §3.1.1): COMPLETED by SendMessage in
 *   errorTable.test.ts "UnsupportedOperation: ..."; FAILED on JSON-RPC in
 *   AgentExecutor.test.ts "cancel: running task ends CANCELED, ..."; all four
 *   states, sent and streamed: here, "a message to a task in any terminal state
 *   is UNSUPPORTED_OPERATION, sent or streamed; nothing runs".
 * - contextId mismatch (2794, spec §3.4.3 MUST): here, "a message whose contextId
 *   is not its task's is INVALID_PARAMS; the task is left as it was".
 * - the follow-up joins the task's history (2799), its contextId is the task's
 *   when the message names none (2815, spec §3.4.3 MUST), a new task's is fresh
 *   or the caller's: here, "contextIds: a new task gets a fresh one ...".
 * - an unknown referenceTaskId is only logged (2811): AgentExecutor.test.ts "the
 *   agent reads the caller's message in our types: ..." (JSON-RPC).
 * - requested extensions narrowed to the card's (2818): not visible on the
 *   wire, nothing of the server reads them afterwards.
 *
 * sendMessage (3073) and sendMessageStream (3139):
 * - messageId required (3075, 3144): here, "a message without a messageId is
 *   INVALID_PARAMS, sent or streamed; nothing runs"; also A2AServer.grpc.test.ts
 *   "a field of the wrong wire type, ...". HTTP+JSON refuses it first
 *   (rest.ts, as the SDK's restHandler), with the same answer.
 * - streaming capability (3140, spec §3.3.4): here, "with streaming off,
 *   SendStreamingMessage and SubscribeToTask are UNSUPPORTED_OPERATION; ...".
 * - a send's push config is saved only when the card declares push (3084,
 *   3153), under the task the send made: here, "with push off, Get, List and
 *   Delete ... a send's config is let go" and "with push on, a send's config
 *   is kept under the task the send made".
 * - blocking until a pause or the end, AUTH_REQUIRED included (3096);
 *   returnImmediately returns the first task (3130), spec §3.2.2: here, "a
 *   blocking send returns at a pause ...".
 * - historyLength on the answer (3097, 3120, 3130, 3166): here, "historyLength:
 *   unset is the whole history, 0 none, N the last N; on send, get and list".
 * - event order (_advanceStreamPattern, 3475), a run with no task or message
 *   (2876, 3112): not reachable from the wire, the executor always opens a run
 *   with its task (run/executor.ts).
 *
 * getTask (3182): blank id (3184): here, "a task id that is blank is
 * INVALID_PARAMS on GetTask, CancelTask and SubscribeToTask", and gRPC in
 * A2AServer.grpc.test.ts "a field of the wrong wire type, ..."; unknown id
 * (3186): errorTable.test.ts "TaskNotFound: ..."; historyLength (3189, 3509):
 * here, "historyLength: ..."; a negative one (3511 reads it as 0): here, "a
 * negative historyLength: ..." (HTTP+JSON refuses it, as spec §6.5 shows).
 *
 * listTasks (3192): pageSize 1..100 (3194): here, "ListTasks: pageSize outside
 * 1..100, ..." (HTTP+JSON 0 and 1.5 also in A2AServer.rest.test.ts "bad input
 * gets a well-formed google.rpc.Status ..."); default 50 (3193): same test;
 * status (3197): same test (JSON-RPC refuses the unknown enum first, in
 * wire/requestShape.ts, with the same answer); statusTimestampAfter (3200):
 * here, "ListTasks: a statusTimestampAfter that is no date is INVALID_PARAMS;
 * a date filters" (JSON transports: gRPC's Timestamp cannot carry one); page
 * token (the store's, 2082): same ListTasks test, and JSON-RPC in
 * A2AServer.test.ts "bad input: body limit, ..."; historyLength (3205): here,
 * "historyLength: ...".
 *
 * cancelTask (3209): blank id (3211): here, "a task id that is blank ...";
 * unknown (3213): here, "an unknown task is TASK_NOT_FOUND on CancelTask and
 * SubscribeToTask", JSON-RPC also in AgentExecutor.test.ts "cancel: ...";
 * already CANCELED answers the task (3217; spec §3.3.1 makes cancel idempotent,
 * §3.1.5 names "already canceled" as not cancelable): here, "CancelTask: a
 * canceled task is answered as it is; ..."; another terminal state is
 * TASK_NOT_CANCELABLE (3220): COMPLETED in errorTable.test.ts
 * "TaskNotCancelable: ...", FAILED and REJECTED in that test here; a running
 * task ends CANCELED (3223): AgentExecutor.test.ts "cancel: ..." and
 * A2AServer.grpc.test.ts "the SDK's gRPC client gets every ending: ..."; a
 * paused one, with no event bus (3233): A2AServer.subscribe.test.ts "%s: a
 * subscriber of a paused task gets its cancel, then its stream ends"; a
 * cancel that does not end CANCELED (3268) or a task gone after it (3265): not
 * reachable, the executor ends every canceled run CANCELED.
 *
 * resubscribe (3335): streaming capability (3336): here, "with streaming off,
 * ..."; blank id (3340): here, "a task id that is blank ..."; unknown (3345):
 * here, "an unknown task ...", JSON-RPC also in A2AServer.test.ts "bad input:
 * ..."; terminal task (3348, spec §3.1.6): here, "SubscribeToTask: a task in
 * any terminal state is UNSUPPORTED_OPERATION; a paused one opens with the
 * task"; the task as first event (3353, spec §3.1.6 MUST): same test.
 *
 * Push configs, create (3273), get (3286), list (3308), delete (3323):
 * push capability (spec §3.3.4): create in errorTable.test.ts
 * "PushNotificationNotSupported: ...", the other three here, "with push off,
 * Get, List and Delete of push configs are PUSH_NOTIFICATION_NOT_SUPPORTED;
 * ..."; blank task id, unknown task, get with no config (3297) or another
 * config's id (3301), delete idempotent (spec §3.1.10 MUST): here, "push
 * configs: a blank task id is INVALID_PARAMS, an unknown task or config
 * TASK_NOT_FOUND; a delete is idempotent"; another caller's configs:
 * A2AServer.push.test.ts "configs made with the create call, ...".
 *
 * getAuthenticatedExtendedAgentCard (2733): capability (2734, spec §3.3.4):
 * here, "GetExtendedAgentCard: UNSUPPORTED_OPERATION unless the card declares
 * it; an anonymous caller gets the public card"; not configured (2737):
 * errorTable.test.ts "ExtendedAgentCardNotConfigured: ..."; an authenticated
 * caller gets the extended card (2743): A2AServer.signing.test.ts "the SDK's
 * client on each transport gets the extended card ..."; an anonymous one the
 * public card (2745; spec §3.1.11 says the client MUST authenticate, and with
 * `authenticate` set the server answers 401 first, A2AServer.auth.test.ts "no
 * or wrong credentials: ..."): here, the same GetExtendedAgentCard test.
 */
import {
  type AgentCapabilities,
  type Message,
  type SendMessageConfiguration,
  type StreamResponse,
  type Task,
  TaskState
} from "@a2a-js/sdk"
import { type Client, ClientFactory, ServiceParameters, withA2AExtensions } from "@a2a-js/sdk/client"
import { describe, expect, it } from "@effect/vitest"
import { type Context, Effect } from "effect"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as ErrorTable from "../../../../src/internal/wire/errorTable.js"
import * as Part from "../../../../src/Part.js"
import { factoryOf, type Transport, transports } from "../../../fixtures/callers.js"
import { captureLogs, listAll, userMessage } from "../../../fixtures/serverAgents.js"
import { webhook } from "../../../fixtures/webhook.js"

type Server = Context.Tag.Service<A2AServer.A2AServer>

/**
 * An agent that ends the way its message says, and the texts it ran: a
 * refusal is made before the agent runs, so a refused message leaves no run.
 */
const serve = (options: Partial<A2AServer.Options<Error, never>> = {}) =>
  Effect.gen(function*() {
    const ran: Array<string> = []
    // The FAILED run's error is logged with its stack: kept here, out of the test output.
    const logs = captureLogs()
    const agent: AgentExecutor.Agent<Error> = (request) => {
      const text = Part.textOf(request.message.parts)
      ran.push(text)
      switch (text) {
        case "ask":
          return Effect.succeed(AgentExecutor.InputRequired({ question: "Which date?" }))
        case "auth":
          return Effect.succeed(AgentExecutor.AuthRequired({ text: "Sign in first" }))
        case "reject":
          return Effect.succeed(AgentExecutor.Rejected({ reason: "not mine to do" }))
        case "fail":
          return Effect.fail(new Error("boom"))
        case "wait":
          return Effect.never
        default:
          return Effect.succeed(AgentExecutor.completedText(`echo ${text}`))
      }
    }
    const server = yield* A2AServer.make({
      agent,
      card: { name: "checks", description: "the request handler's checks" },
      shutdownTimeout: "100 millis",
      ...options
    }).pipe(Effect.provide(logs.layer))
    return { server, ran }
  })

/**
 * The SDK's raw client of `transport`, from the served card with
 * `capabilities` over its own: the SDK's client refuses by itself what a card
 * does not declare (push configs, the extended card) or sends it otherwise
 * (a stream as a plain send), and the server's own check is the one tested.
 */
const clientOf = (server: Server, transport: Transport, capabilities: Partial<AgentCapabilities> = {}) =>
  Effect.promise((): Promise<Client> =>
    new ClientFactory({ transports: [factoryOf(transport)] }).createFromAgentCard({
      ...server.card,
      capabilities: { ...server.card.capabilities!, ...capabilities }
    })
  )

const request = (message: Message, configuration: Partial<SendMessageConfiguration> = {}) => ({
  tenant: "",
  message,
  configuration: {
    acceptedOutputModes: [],
    taskPushNotificationConfig: undefined,
    returnImmediately: false,
    ...configuration
  },
  metadata: {}
})

const send = (client: Client, message: Message, configuration: Partial<SendMessageConfiguration> = {}) =>
  Effect.promise(() => client.sendMessage(request(message, configuration)) as Promise<Task>)

/** A task ended in `state` (or paused, for INPUT_REQUIRED); a CANCELED one is a paused task, canceled. */
const taskIn = (client: Client, state: "COMPLETED" | "FAILED" | "CANCELED" | "REJECTED" | "INPUT_REQUIRED") =>
  Effect.gen(function*() {
    const text = { COMPLETED: "hello", FAILED: "fail", REJECTED: "reject", INPUT_REQUIRED: "ask", CANCELED: "ask" }[
      state
    ]
    const task = yield* send(client, userMessage(text))
    const ended = state === "CANCELED"
      ? yield* Effect.promise(() => client.cancelTask({ id: task.id, tenant: "", metadata: {} }))
      : task
    expect(ended.status?.state).toBe(TaskState[`TASK_STATE_${state}`])
    return ended
  })

/** The first event of a stream (its opening task), or the stream's refusal. */
const firstOf = (events: () => AsyncGenerator<StreamResponse>) => async () => {
  const opened = events()
  try {
    return (await opened.next()).value
  } finally {
    void opened.return(undefined as never).catch(() => undefined)
  }
}

/** What a peer reads of a refusal, through the SDK's client of `transport`: the reason and the transport's code. */
interface Refusal {
  readonly reason: string | undefined
  readonly code: number | undefined
}

/** The refusal the error table says `row` is on `transport`. */
const as = (row: ErrorTable.Row, transport: Transport): Refusal => ({
  reason: row.reason,
  code: transport === "JSONRPC" ? row.jsonRpc : transport === "HTTP+JSON" ? row.http : ErrorTable.grpcCodes[row.grpc]
})

/** What `call` is refused with; an answer fails the test. */
const refusal = (transport: Transport, call: () => Promise<unknown>): Effect.Effect<Refusal> =>
  Effect.promise(() =>
    Promise.resolve().then(call).then(
      (answer) => Promise.reject(new Error(`expected a refusal, got ${JSON.stringify(answer)}`)),
      (error: { reason?: string; envelopeCode?: number; statusCode?: number; status?: number }) => ({
        reason: error.reason,
        code: transport === "JSONRPC"
          ? error.envelopeCode
          : transport === "HTTP+JSON"
          ? error.statusCode
          : error.status
      })
    )
  )

const {
  ExtensionSupportRequired,
  InvalidParams,
  PushNotificationNotSupported,
  TaskNotCancelable,
  TaskNotFound,
  UnsupportedOperation
} = ErrorTable.rows

/** A push config of `taskId` to `url`. */
const pushConfig = (taskId: string, url: string) => ({
  tenant: "",
  id: "hook",
  taskId,
  url,
  token: "t",
  authentication: undefined
})

/** A server that pushes, to a webhook of its own on 127.0.0.1 (the only address it may push to). */
const servePushing = Effect.gen(function*() {
  const hook = yield* webhook()
  const { server } = yield* serve({ push: { allowPushTargets: ["127.0.0.1"] } })
  return { server, hook }
})

const terminal = ["COMPLETED", "FAILED", "CANCELED", "REJECTED"] as const

describe.each(transports)("the request handler's checks on %s", (transport) => {
  it.scopedLive("a message without a messageId is INVALID_PARAMS, sent or streamed; nothing runs", () =>
    Effect.gen(function*() {
      const { ran, server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const message = userMessage("hello", { messageId: "" })
      expect(yield* refusal(transport, () => client.sendMessage(request(message)))).toEqual(
        as(InvalidParams, transport)
      )
      expect(yield* refusal(transport, firstOf(() => client.sendMessageStream(request(message))))).toEqual(
        as(InvalidParams, transport)
      )
      expect(ran).toEqual([])
    }))

  it.scopedLive("a required extension the message does not declare is EXTENSION_SUPPORT_REQUIRED when streamed too; nothing runs", () =>
    Effect.gen(function*() {
      const uri = "https://example.com/extensions/required"
      const { ran, server } = yield* serve({
        card: {
          name: "checks",
          description: "an extension required",
          capabilities: { extensions: [{ uri, description: "required", required: true, params: undefined }] }
        }
      })
      const client = yield* clientOf(server, transport)
      expect(yield* refusal(transport, firstOf(() => client.sendMessageStream(request(userMessage("hello")))))).toEqual(
        as(ExtensionSupportRequired, transport)
      )
      expect(ran).toEqual([])
      const declared = yield* Effect.promise(
        firstOf(() =>
          client.sendMessageStream(request(userMessage("hello")), {
            serviceParameters: ServiceParameters.create(withA2AExtensions(uri))
          })
        )
      )
      expect(declared?.payload?.$case).toBe("task")
      expect(ran).toEqual(["hello"])
    }))

  it.scopedLive("a message whose taskId is blank is INVALID_PARAMS, not TASK_NOT_FOUND; nothing runs", () =>
    Effect.gen(function*() {
      const { ran, server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const message = userMessage("hello", { taskId: "  " })
      expect(yield* refusal(transport, () => client.sendMessage(request(message)))).toEqual(
        as(InvalidParams, transport)
      )
      expect(yield* refusal(transport, firstOf(() => client.sendMessageStream(request(message))))).toEqual(
        as(InvalidParams, transport)
      )
      expect(ran).toEqual([])
    }))

  it.scopedLive("a message naming a task that does not exist is TASK_NOT_FOUND, sent or streamed; nothing runs", () =>
    Effect.gen(function*() {
      const { ran, server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const message = userMessage("hello", { taskId: crypto.randomUUID() })
      expect(yield* refusal(transport, () => client.sendMessage(request(message)))).toEqual(as(TaskNotFound, transport))
      expect(yield* refusal(transport, firstOf(() => client.sendMessageStream(request(message))))).toEqual(
        as(TaskNotFound, transport)
      )
      expect(ran).toEqual([])
    }))

  it.scopedLive("a message to a task in any terminal state is UNSUPPORTED_OPERATION, sent or streamed; nothing runs", () =>
    Effect.gen(function*() {
      const { ran, server } = yield* serve()
      const client = yield* clientOf(server, transport)
      for (const state of terminal) {
        const task = yield* taskIn(client, state)
        const runs = ran.length
        const message = userMessage("more", { taskId: task.id, contextId: task.contextId })
        expect(yield* refusal(transport, () => client.sendMessage(request(message))), state).toEqual(
          as(UnsupportedOperation, transport)
        )
        expect(yield* refusal(transport, firstOf(() => client.sendMessageStream(request(message)))), state).toEqual(
          as(UnsupportedOperation, transport)
        )
        expect(ran.length, state).toBe(runs)
      }
    }))

  it.scopedLive("a message whose contextId is not its task's is INVALID_PARAMS; the task is left as it was", () =>
    Effect.gen(function*() {
      const { ran, server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const task = yield* taskIn(client, "INPUT_REQUIRED")
      const message = userMessage("tomorrow", { taskId: task.id, contextId: `other-${task.contextId}` })
      expect(yield* refusal(transport, () => client.sendMessage(request(message)))).toEqual(
        as(InvalidParams, transport)
      )
      expect(yield* refusal(transport, firstOf(() => client.sendMessageStream(request(message))))).toEqual(
        as(InvalidParams, transport)
      )
      expect(ran).toEqual(["ask"])
      const now = yield* Effect.promise(() => client.getTask({ id: task.id, tenant: "", historyLength: undefined }))
      expect(now.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      expect(now.history.map((m) => m.messageId)).toEqual(task.history.map((m) => m.messageId))
      // The task's own contextId is what was wrong: with it, the same answer is taken.
      const taken = yield* send(client, { ...message, messageId: crypto.randomUUID(), contextId: task.contextId })
      expect(taken.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    }))

  it.scopedLive("contextIds: a new task gets a fresh one or keeps the caller's; a follow-up naming only its task gets the task's, and joins its history", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const fresh = yield* send(client, userMessage("hello"))
      const other = yield* send(client, userMessage("hello"))
      expect(fresh.contextId).not.toBe("")
      expect(other.contextId).not.toBe(fresh.contextId)
      const kept = yield* send(client, userMessage("hello", { contextId: "trip-42" }))
      expect(kept.contextId).toBe("trip-42")
      const paused = yield* taskIn(client, "INPUT_REQUIRED")
      const answer = userMessage("tomorrow", { taskId: paused.id })
      const done = yield* send(client, answer)
      expect([done.id, done.contextId, done.status?.state]).toEqual([
        paused.id,
        paused.contextId,
        TaskState.TASK_STATE_COMPLETED
      ])
      const ids = done.history.map((m) => m.messageId)
      expect(ids).toContain(paused.history[0]!.messageId)
      expect(ids).toContain(answer.messageId)
    }))

  it.scopedLive("a blocking send returns at a pause (INPUT_REQUIRED, AUTH_REQUIRED) or the end; returnImmediately returns the task still running", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const states = []
      for (const text of ["ask", "auth", "hello", "reject"]) {
        states.push((yield* send(client, userMessage(text))).status?.state)
      }
      expect(states).toEqual([
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_REJECTED
      ])
      const running = yield* send(client, userMessage("wait"), { returnImmediately: true })
      expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(running.status?.state)
    }))

  it.scopedLive("historyLength: unset is the whole history, 0 none, N the last N; on send, get and list", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const paused = yield* taskIn(client, "INPUT_REQUIRED")
      const answer = userMessage("tomorrow", { taskId: paused.id })
      const whole = yield* send(client, answer)
      expect(whole.history.length).toBeGreaterThanOrEqual(2)
      const get = (historyLength: number | undefined) =>
        Effect.promise(() => client.getTask({ id: paused.id, tenant: "", historyLength }))
      expect((yield* get(undefined)).history).toEqual(whole.history)
      expect((yield* get(0)).history).toEqual([])
      expect((yield* get(1)).history).toEqual(whole.history.slice(-1))
      expect((yield* get(2)).history).toEqual(whole.history.slice(-2))
      const listed = (historyLength: number | undefined) =>
        Effect.map(
          Effect.promise(() => client.listTasks(listAll({ historyLength, contextId: paused.contextId }))),
          (response) => response.tasks.map((task) => task.history)
        )
      expect(yield* listed(undefined)).toEqual([whole.history])
      expect(yield* listed(0)).toEqual([[]])
      expect(yield* listed(1)).toEqual([whole.history.slice(-1)])
      const sent = yield* send(client, userMessage("ask"), { historyLength: 0 })
      expect([sent.status?.state, sent.history]).toEqual([TaskState.TASK_STATE_INPUT_REQUIRED, []])
      const followed = yield* send(client, userMessage("later", { taskId: sent.id }), { historyLength: 1 })
      expect(followed.history.length).toBe(1)
    }))

  it.scopedLive("with streaming off, SendStreamingMessage and SubscribeToTask are UNSUPPORTED_OPERATION; nothing runs", () =>
    Effect.gen(function*() {
      const { ran, server } = yield* serve({
        card: { name: "checks", description: "no streaming", capabilities: { streaming: false, extensions: [] } }
      })
      expect(server.card.capabilities?.streaming).toBe(false)
      const client = yield* clientOf(server, transport, { streaming: true })
      const paused = yield* taskIn(client, "INPUT_REQUIRED")
      expect(yield* refusal(transport, firstOf(() => client.sendMessageStream(request(userMessage("hello")))))).toEqual(
        as(UnsupportedOperation, transport)
      )
      expect(yield* refusal(transport, firstOf(() => client.resubscribeTask({ id: paused.id, tenant: "" }))))
        .toEqual(as(UnsupportedOperation, transport))
      expect(ran).toEqual(["ask"])
    }))

  it.scopedLive("a task id that is blank is INVALID_PARAMS on GetTask, CancelTask and SubscribeToTask", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const id = "  "
      expect(yield* refusal(transport, () => client.getTask({ id, tenant: "", historyLength: undefined }))).toEqual(
        as(InvalidParams, transport)
      )
      expect(yield* refusal(transport, () => client.cancelTask({ id, tenant: "", metadata: {} }))).toEqual(
        as(InvalidParams, transport)
      )
      expect(yield* refusal(transport, firstOf(() => client.resubscribeTask({ id, tenant: "" })))).toEqual(
        as(InvalidParams, transport)
      )
    }))

  it.scopedLive("an unknown task is TASK_NOT_FOUND on CancelTask and SubscribeToTask", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const id = crypto.randomUUID()
      expect(yield* refusal(transport, () => client.cancelTask({ id, tenant: "", metadata: {} }))).toEqual(
        as(TaskNotFound, transport)
      )
      expect(yield* refusal(transport, firstOf(() => client.resubscribeTask({ id, tenant: "" })))).toEqual(
        as(TaskNotFound, transport)
      )
    }))

  it.scopedLive("a negative historyLength: no history on JSON-RPC and gRPC, as the SDK reads it; INVALID_PARAMS on HTTP+JSON", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const task = yield* send(client, userMessage("hello"))
      expect(task.history.length).toBeGreaterThan(0)
      const get = () => client.getTask({ id: task.id, tenant: "", historyLength: -1 })
      const list = () => client.listTasks(listAll({ historyLength: -1 }))
      if (transport === "HTTP+JSON") {
        // The SDK's restHandler refuses it before the handler, and our routes keep its rule (rest.ts historyLengthOf);
        // spec 1.0.1 §6.5 shows a negative historyLength refused as a validation error.
        expect(yield* refusal(transport, get)).toEqual(as(InvalidParams, transport))
        expect(yield* refusal(transport, list)).toEqual(as(InvalidParams, transport))
      } else {
        // The SDK's handler (_applyHistoryLengthSemantics) reads anything up to 0 as 0.
        expect((yield* Effect.promise(get)).history).toEqual([])
        expect((yield* Effect.promise(list)).tasks.map((listed) => listed.history)).toEqual([[]])
      }
    }))

  it.scopedLive("ListTasks: pageSize outside 1..100, an unknown status, a bad page token are INVALID_PARAMS; unset, 50 a page", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      yield* send(client, userMessage("hello"))
      const list = (overrides: Parameters<typeof listAll>[0]) => () => client.listTasks(listAll(overrides))
      for (const pageSize of [0, -1, 101]) {
        expect(yield* refusal(transport, list({ pageSize })), `pageSize ${pageSize}`).toEqual(
          as(InvalidParams, transport)
        )
      }
      expect(yield* refusal(transport, list({ status: 99 as TaskState }))).toEqual(as(InvalidParams, transport))
      expect(yield* refusal(transport, list({ pageToken: "%%%" }))).toEqual(as(InvalidParams, transport))
      const page = yield* Effect.promise(list({ pageSize: undefined }))
      expect([page.tasks.length, page.pageSize, page.nextPageToken]).toEqual([1, 50, ""])
      expect((yield* Effect.promise(list({ pageSize: 100 }))).tasks.length).toBe(1)
    }))

  it.scopedLive("ListTasks: a statusTimestampAfter that is no date is INVALID_PARAMS; a date filters", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const since = (statusTimestampAfter: string) => () => client.listTasks(listAll({ statusTimestampAfter }))
      // gRPC carries a google.protobuf.Timestamp, which holds no text to be wrong (the SDK's client cannot even
      // encode one): the check is seen on the JSON transports only.
      if (transport !== "GRPC") {
        expect(yield* refusal(transport, since("not a date"))).toEqual(as(InvalidParams, transport))
      }
      const before = new Date(Date.now() - 60_000).toISOString()
      yield* send(client, userMessage("hello"))
      const after = new Date(Date.now() + 60_000).toISOString()
      expect((yield* Effect.promise(since(before))).tasks.length).toBe(1)
      expect((yield* Effect.promise(since(after))).tasks.length).toBe(0)
    }))

  it.scopedLive("CancelTask: a canceled task is answered as it is; one that ended otherwise is TASK_NOT_CANCELABLE", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      const canceled = yield* taskIn(client, "CANCELED")
      const again = yield* Effect.promise(() => client.cancelTask({ id: canceled.id, tenant: "", metadata: {} }))
      expect([again.id, again.status?.state]).toEqual([canceled.id, TaskState.TASK_STATE_CANCELED])
      for (const state of ["COMPLETED", "FAILED", "REJECTED"] as const) {
        const task = yield* taskIn(client, state)
        expect(yield* refusal(transport, () => client.cancelTask({ id: task.id, tenant: "", metadata: {} })), state)
          .toEqual(as(TaskNotCancelable, transport))
        const now = yield* Effect.promise(() => client.getTask({ id: task.id, tenant: "", historyLength: undefined }))
        expect(now.status?.state, state).toBe(TaskState[`TASK_STATE_${state}`])
      }
    }))

  it.scopedLive("SubscribeToTask: a task in any terminal state is UNSUPPORTED_OPERATION; a paused one opens with the task", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      const client = yield* clientOf(server, transport)
      for (const state of terminal) {
        const task = yield* taskIn(client, state)
        expect(yield* refusal(transport, firstOf(() => client.resubscribeTask({ id: task.id, tenant: "" }))), state)
          .toEqual(as(UnsupportedOperation, transport))
      }
      const paused = yield* taskIn(client, "INPUT_REQUIRED")
      const first = yield* Effect.promise(firstOf(() => client.resubscribeTask({ id: paused.id, tenant: "" })))
      expect(first?.payload?.$case === "task" && [first.payload.value.id, first.payload.value.status?.state]).toEqual([
        paused.id,
        TaskState.TASK_STATE_INPUT_REQUIRED
      ])
    }))

  it.scopedLive("with push off, Get, List and Delete of push configs are PUSH_NOTIFICATION_NOT_SUPPORTED; a send's config is let go", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      expect(server.card.capabilities?.pushNotifications).toBe(false)
      // The SDK's client refuses by itself what the card does not declare: told the server pushes, it asks.
      const client = yield* clientOf(server, transport, { pushNotifications: true })
      // Nothing listens there, and nothing is sent: with push off the server has no sender.
      const config = pushConfig("", "http://127.0.0.1:9/hook")
      const task = yield* send(client, userMessage("ask"), { taskPushNotificationConfig: config })
      expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
      const byId = { tenant: "", taskId: task.id, id: "hook" }
      expect(yield* refusal(transport, () => client.getTaskPushNotificationConfig(byId))).toEqual(
        as(PushNotificationNotSupported, transport)
      )
      expect(
        yield* refusal(
          transport,
          () => client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 10, pageToken: "" })
        )
      ).toEqual(as(PushNotificationNotSupported, transport))
      expect(yield* refusal(transport, () => client.deleteTaskPushNotificationConfig(byId))).toEqual(
        as(PushNotificationNotSupported, transport)
      )
    }))

  it.scopedLive("with push on, a send's config is kept under the task the send made", () =>
    Effect.gen(function*() {
      const { hook, server } = yield* servePushing
      const client = yield* clientOf(server, transport)
      const task = yield* send(client, userMessage("ask"), { taskPushNotificationConfig: pushConfig("", hook.url) })
      const listed = yield* Effect.promise(() =>
        client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 10, pageToken: "" })
      )
      expect(listed.configs.map((config) => [config.taskId, config.id, config.url])).toEqual([[
        task.id,
        "hook",
        hook.url
      ]])
    }))

  it.scopedLive("push configs: a blank task id is INVALID_PARAMS, an unknown task or config TASK_NOT_FOUND; a delete is idempotent", () =>
    Effect.gen(function*() {
      const { hook, server } = yield* servePushing
      const client = yield* clientOf(server, transport)
      const operations = (taskId: string) => ({
        create: () => client.createTaskPushNotificationConfig(pushConfig(taskId, hook.url)),
        get: () => client.getTaskPushNotificationConfig({ tenant: "", taskId, id: "hook" }),
        list: () => client.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 10, pageToken: "" }),
        delete: () => client.deleteTaskPushNotificationConfig({ tenant: "", taskId, id: "hook" })
      })
      for (const [name, call] of Object.entries(operations("  "))) {
        expect(yield* refusal(transport, call), `${name} blank`).toEqual(as(InvalidParams, transport))
      }
      for (const [name, call] of Object.entries(operations(crypto.randomUUID()))) {
        expect(yield* refusal(transport, call), `${name} unknown`).toEqual(as(TaskNotFound, transport))
      }
      const task = yield* send(client, userMessage("ask"))
      const ofTask = operations(task.id)
      // No config yet, then another config's id: neither is found.
      expect(yield* refusal(transport, ofTask.get), "get before any").toEqual(as(TaskNotFound, transport))
      const created = yield* Effect.promise(ofTask.create)
      expect([created.taskId, created.id, created.url]).toEqual([task.id, "hook", hook.url])
      expect(
        yield* refusal(
          transport,
          () => client.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "other" })
        )
      ).toEqual(as(TaskNotFound, transport))
      expect((yield* Effect.promise(ofTask.get)).url).toBe(hook.url)
      expect((yield* Effect.promise(ofTask.list)).configs.map((config) => config.id)).toEqual(["hook"])
      yield* Effect.promise(ofTask.delete)
      yield* Effect.promise(ofTask.delete)
      expect((yield* Effect.promise(ofTask.list)).configs).toEqual([])
    }))

  it.scopedLive("GetExtendedAgentCard: UNSUPPORTED_OPERATION unless the card declares it; an anonymous caller gets the public card", () =>
    Effect.gen(function*() {
      const { server } = yield* serve()
      expect(server.card.capabilities?.extendedAgentCard).toBeUndefined()
      const client = yield* clientOf(server, transport, { extendedAgentCard: true })
      expect(yield* refusal(transport, () => client.getAgentCard())).toEqual(as(UnsupportedOperation, transport))
      const { server: extended } = yield* serve({ extendedCard: { description: "for callers we know" } })
      expect(extended.card.capabilities?.extendedAgentCard).toBe(true)
      const anonymous = yield* clientOf(extended, transport)
      const card = yield* Effect.promise(() => anonymous.getAgentCard())
      expect(card.description).toBe("the request handler's checks")
    }))
})
