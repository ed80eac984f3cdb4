import { A2AService } from "@a2a-js/sdk/server/grpc"
import { describe, expect, it } from "@effect/vitest"
import * as Grpc from "@grpc/grpc-js"
import { Duration, Effect } from "effect"
import type * as net from "node:net"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as slowReader from "../src/internal/server/handler/slowReader.js"
import * as sse from "../src/internal/server/http/sse.js"
import * as Part from "../src/Part.js"
import { eventually, post, rpc, stalledStream, userMessage } from "./fixtures/serverAgents.js"

const card = { name: "bad-input", description: "bad input" }

/** An agent that counts its runs. */
const counted = () => {
  const runs = { count: 0 }
  const agent: AgentExecutor.Agent = () =>
    Effect.sync(() => {
      runs.count++
      return AgentExecutor.completedText("done")
    })
  return { agent, runs }
}

const sendRequest = (extra: Record<string, unknown> = { id: 1 }) => ({
  jsonrpc: "2.0",
  ...extra,
  method: "SendMessage",
  params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "hi" }] } }
})

const v1 = { "A2A-Version": "1.0" }

describe("A2AServer JSON-RPC bad input", () => {
  it.scopedLive("a body that is not a request object is -32600 with our own text, parsed once and never run", () =>
    Effect.gen(function*() {
      const { agent, runs } = counted()
      const server = yield* A2AServer.make({ agent, card, maxInFlight: 4 })
      // A JSON string holding a request: the SDK's handler would parse it again and run it.
      const wrapped = JSON.stringify(JSON.stringify(sendRequest()))
      const answers = yield* Effect.all(
        Array.from({ length: 40 }, () => post(server.rpcUrl, wrapped, v1)),
        { concurrency: "unbounded" }
      )
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        expect(JSON.parse(answer.text)).toMatchObject({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: "Invalid Request: the body must be a JSON-RPC request object." }
        })
      }
      // One nested past the nesting bound, inside a string: refused the same way, not a -32603.
      const deep = `${"{\"inner\":".repeat(10_000)}"leaf"${"}".repeat(10_000)}`
      const nested = yield* post(
        server.rpcUrl,
        JSON.stringify(JSON.stringify(sendRequest()).replace(/}$/, `,"deep":${deep}}`)),
        v1
      )
      expect(JSON.parse(nested.text).error.code).toBe(-32600)
      // A string that is not JSON inside: JavaScript's parse message never reaches the wire.
      const bad = yield* post(server.rpcUrl, JSON.stringify("str"), v1)
      expect(JSON.parse(bad.text).error).toMatchObject({ code: -32600 })
      expect(bad.text).not.toMatch(/Unexpected token|not valid JSON/)
      for (const body of ["5", "null", "true", "[]", JSON.stringify([sendRequest()])]) {
        for (const headers of [v1, {}]) {
          const answer = JSON.parse((yield* post(server.rpcUrl, body, headers)).text)
          expect(answer.id).toBeNull()
          expect(answer.error.code).toBe(-32600)
          expect(answer.error.message).toBe(
            body.startsWith("[")
              ? "Batch requests are not supported."
              : "Invalid Request: the body must be a JSON-RPC request object."
          )
        }
      }
      expect(runs.count).toBe(0)
    }))

  it.scopedLive("a notification (no id) gets 204 and no body, and does not run; an invalid one is answered", () =>
    Effect.gen(function*() {
      const { agent, runs } = counted()
      const server = yield* A2AServer.make({ agent, card })
      for (const headers of [v1, {}]) {
        const notification = yield* post(server.rpcUrl, JSON.stringify(sendRequest({})), headers)
        expect(notification.status).toBe(204)
        expect(notification.text).toBe("")
      }
      const legacy = yield* post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0", method: "message/send", params: {} }))
      expect(legacy.status).toBe(204)
      // Not a valid request, so not a notification: JSON-RPC 2.0 answers it with an error under the id null.
      const invalid = JSON.parse((yield* post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0" }), v1)).text)
      expect(invalid).toMatchObject({ id: null, error: { code: -32600 } })
      // An explicit null id is a request, not a notification: it is run and answered.
      const nullId = yield* post(server.rpcUrl, JSON.stringify(sendRequest({ id: null })), v1)
      expect(JSON.parse(nullId.text)).toMatchObject({
        id: null,
        result: { task: { status: { state: "TASK_STATE_COMPLETED" } } }
      })
      expect(runs.count).toBe(1)
    }))
})

/** Send params with `message` changed by `change`. */
const sendParams = (change: Record<string, unknown>) => ({
  message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "hi" }], ...change }
})

/** Wrong types, each with the field its refusal names. */
const wrongTypes: ReadonlyArray<readonly [unknown, string]> = [
  [sendParams({ parts: [null] }), "message.parts[0] must be an object"],
  [sendParams({ messageId: 5 }), "message.messageId must be a string"],
  [sendParams({ parts: [{ text: { nested: true } }] }), "message.parts[0].text must be a string"],
  [
    sendParams({ parts: [{ text: "a", url: "https://example.com" }] }),
    "message.parts[0] must have exactly one of text, raw, url, data"
  ],
  [sendParams({ role: "ROLE_ADMIN" }), "message.role must be one of ROLE_UNSPECIFIED, ROLE_USER, ROLE_AGENT"],
  [sendParams({ metadata: "x" }), "message.metadata must be an object"],
  [
    { ...sendParams({}), configuration: { returnImmediately: "yes" } },
    "configuration.returnImmediately must be a boolean"
  ],
  [{ ...sendParams({}), configuration: { historyLength: 1.5 } }, "configuration.historyLength must be a 32-bit integer"]
]

describe("A2AServer strict decoding", () => {
  it.scopedLive("a wrong type is refused naming the field, never coerced, on JSON-RPC and HTTP+JSON alike; nothing runs", () =>
    Effect.gen(function*() {
      const { agent, runs } = counted()
      const server = yield* A2AServer.make({ agent, card, transports: ["JSONRPC", "HTTP+JSON"] })
      const restUrl = server.urls["HTTP+JSON"]!
      for (const [params, named] of wrongTypes) {
        for (const method of ["SendMessage", "SendStreamingMessage"]) {
          const answer = JSON.parse((yield* rpc(server.rpcUrl, method, params)).text)
          expect(answer.error).toMatchObject({ code: -32602, message: `Invalid params: ${named}.` })
        }
        for (const route of ["message:send", "message:stream"]) {
          const answer = yield* post(`${restUrl}/${route}`, JSON.stringify(params), v1)
          expect(answer.status).toBe(400)
          expect(JSON.parse(answer.text).error).toMatchObject({
            status: "INVALID_ARGUMENT",
            message: `Invalid params: ${named}.`
          })
        }
      }
      const push = JSON.parse(
        (yield* rpc(server.rpcUrl, "CreateTaskPushNotificationConfig", { taskId: "t", url: 7 })).text
      )
      expect(push.error).toMatchObject({ code: -32602, message: "Invalid params: url must be a string." })
      const getTask = JSON.parse((yield* rpc(server.rpcUrl, "GetTask", { id: { $ne: "" } })).text)
      expect(getTask.error).toMatchObject({ code: -32602, message: "Invalid params: id must be a string." })
      expect(runs.count).toBe(0)
      // What ProtoJSON allows is served: proto names, an integer as a string, an enum by number, a null field.
      const allowed = JSON.parse(
        (yield* rpc(server.rpcUrl, "SendMessage", {
          message: { message_id: crypto.randomUUID(), role: 1, parts: [{ text: "hi", url: null }], context_id: null },
          configuration: { historyLength: "3" }
        })).text
      )
      expect(allowed.result.task.status.state).toBe("TASK_STATE_COMPLETED")
      expect(runs.count).toBe(1)
    }))
})

/** v0.3 send params with `message` changed by `change`, as the SDK's v0.3 client writes them. */
const legacySendParams = (change: Record<string, unknown>) => ({
  message: {
    kind: "message",
    messageId: crypto.randomUUID(),
    role: "user",
    parts: [{ kind: "text", text: "hi" }],
    ...change
  }
})

/** v0.3 methods with wrong types or missing fields, each with the field its refusal names. */
const legacyWrongTypes: ReadonlyArray<readonly [string, unknown, string]> = [
  ["message/send", legacySendParams({ messageId: 5 }), "message.messageId must be a string"],
  ["message/send", legacySendParams({ parts: [null] }), "message.parts[0] must be an object"],
  ["message/send", legacySendParams({ parts: "hi" }), "message.parts must be an array"],
  [
    "message/send",
    legacySendParams({ parts: [{ kind: "text", text: { nested: true } }] }),
    "message.parts[0].text must be a string"
  ],
  ["message/send", legacySendParams({ parts: [{ kind: "text" }] }), "message.parts[0].text is required"],
  [
    "message/send",
    legacySendParams({ parts: [{ text: "hi" }] }),
    "message.parts[0].kind must be one of text, file, data"
  ],
  ["message/send", legacySendParams({ parts: [{ kind: "file" }] }), "message.parts[0].file is required"],
  [
    "message/send",
    legacySendParams({ parts: [{ kind: "file", file: { uri: 5 } }] }),
    "message.parts[0].file.uri must be a string"
  ],
  ["message/send", legacySendParams({ parts: [{ kind: "data", data: 5 }] }), "message.parts[0].data must be an object"],
  ["message/send", legacySendParams({ extensions: "abc" }), "message.extensions must be an array"],
  ["message/send", legacySendParams({ contextId: 5 }), "message.contextId must be a string"],
  [
    "message/send",
    { ...legacySendParams({}), configuration: { blocking: "yes" } },
    "configuration.blocking must be a boolean"
  ],
  [
    "message/send",
    { ...legacySendParams({}), configuration: { historyLength: "3" } },
    "configuration.historyLength must be a 32-bit integer"
  ],
  [
    "message/stream",
    legacySendParams({ parts: [{ kind: "text", text: { nested: true } }] }),
    "message.parts[0].text must be a string"
  ],
  ["tasks/get", { id: { $ne: "" } }, "id must be a string"],
  ["tasks/get", {}, "id is required"],
  ["tasks/cancel", { id: 5 }, "id must be a string"],
  ["tasks/resubscribe", { id: 5 }, "id must be a string"],
  [
    "tasks/pushNotificationConfig/set",
    { taskId: "t", pushNotificationConfig: { url: 7 } },
    "pushNotificationConfig.url must be a string"
  ],
  [
    "tasks/pushNotificationConfig/delete",
    { id: "t", pushNotificationConfigId: 5 },
    "pushNotificationConfigId must be a string"
  ]
]

describe("A2AServer strict decoding of v0.3 JSON-RPC", () => {
  it.scopedLive("a wrong type or a missing field is -32602 naming the field, never coerced, never -32603; nothing runs", () =>
    Effect.gen(function*() {
      const { agent, runs } = counted()
      const server = yield* A2AServer.make({ agent, card })
      for (const [method, params, named] of legacyWrongTypes) {
        // No A2A-Version: a v0.3 request.
        const answer = yield* post(server.rpcUrl, JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }))
        expect(JSON.parse(answer.text), `${method} ${JSON.stringify(params)}`).toMatchObject({
          id: 1,
          error: { code: -32602, message: `Invalid params: ${named}.` }
        })
      }
      expect(runs.count).toBe(0)
      // What v0.3 allows is served: every part kind, optional fields left null, unknown fields.
      const allowed = yield* post(
        server.rpcUrl,
        JSON.stringify({
          jsonrpc: "2.0",
          id: 2,
          method: "message/send",
          params: {
            ...legacySendParams({
              contextId: null,
              parts: [
                { kind: "text", text: "hi", metadata: { a: 1 } },
                { kind: "file", file: { bytes: "aGk=", mimeType: "text/plain" } },
                { kind: "file", file: { uri: "https://example.com/a", name: null } },
                { kind: "data", data: { a: [1] } }
              ],
              future: 1
            }),
            configuration: { acceptedOutputModes: ["text/plain"], historyLength: 3, blocking: true }
          }
        })
      )
      expect(JSON.parse(allowed.text).result.status.state).toBe("completed")
      expect(runs.count).toBe(1)
    }))
})

/**
 * An agent that publishes `count` versions of one artifact of about `size` bytes (each replaces the last in the
 * task, which stays small), then completes.
 */
const chatty = (count: number, size: number): AgentExecutor.Agent => (request) =>
  Effect.gen(function*() {
    if (Part.textOf(request.message.parts) === "quick") return AgentExecutor.completedText("quick")
    const text = "x".repeat(size)
    for (let i = 0; i < count; i++) {
      yield* AgentExecutor.artifact(Part.Artifact.make({
        artifactId: "draft",
        name: "draft",
        description: "",
        parts: [Part.TextPart.make({ text: `${i} ${text}` })]
      }))
    }
    return AgentExecutor.completedText("done")
  })

/** Reads what `socket` still sends until its chunked answer ends or its connection closes, or the time runs out. */
const readToEnd = (socket: net.Socket) =>
  Effect.async<string>((resume) => {
    let text = ""
    const done = () => resume(Effect.succeed(Buffer.from(text, "latin1").toString("utf8")))
    socket.removeAllListeners("data")
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1")
      if (text.endsWith("\r\n0\r\n\r\n")) done()
    })
    socket.once("close", done)
    socket.resume()
  }).pipe(Effect.timeout("30 seconds"))

/** Times a plain SendMessage, answered at once by `chatty`'s quick path. */
const timedSend = (url: string) =>
  Effect.map(
    Effect.timed(
      rpc(url, "SendMessage", {
        message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "quick" }] }
      })
    ),
    ([duration, answer]) => {
      expect(JSON.parse(answer.text).result.task.status.state).toBe("TASK_STATE_COMPLETED")
      return Duration.toMillis(duration)
    }
  )

/** Opens raw gRPC SendStreamingMessage calls of "go" (v1.0) to `url`, on one client closed with the scope. */
const grpcStreams = (url: string) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => new Grpc.Client(url, Grpc.credentials.createInsecure())),
      (remote) => Effect.sync(() => remote.close())
    ),
    (remote) => () => {
      const metadata = new Grpc.Metadata()
      metadata.set("a2a-version", "1.0")
      return remote.makeServerStreamRequest(
        A2AService.sendStreamingMessage.path,
        A2AService.sendStreamingMessage.requestSerialize,
        A2AService.sendStreamingMessage.responseDeserialize,
        { tenant: "", message: userMessage("go"), configuration: undefined, metadata: {} },
        metadata
      )
    }
  )

describe("A2AServer streams whose readers do not read", () => {
  it.scopedLive("streams read no more are ended once their readers are more than a bound behind, with a typed last event; other requests stay quick", () =>
    Effect.gen(function*() {
      // Far more than the sockets' buffers hold: the rest waits on the server, up to the bound.
      const server = yield* A2AServer.make({ agent: chatty(1000, 8192), card })
      const baseline = Math.max(...(yield* Effect.all([1, 2, 3].map(() => timedSend(server.rpcUrl)))))
      const stalled = yield* Effect.all([1, 2, 3].map(() => stalledStream(server.address.port, "go")))
      // Not a benchmark: a bound generous enough for a loaded machine, far below the seconds a stalled server takes.
      const during = yield* Effect.all([1, 2, 3].map(() => timedSend(server.rpcUrl)))
      expect(Math.max(...during)).toBeLessThan(Math.max(2000, 20 * baseline))
      for (const { taskId } of stalled) {
        // The run is not held back by its reader: it ends while the stream is stalled.
        yield* eventually(
          Effect.map(
            rpc(server.rpcUrl, "GetTask", { id: taskId }),
            (answer) => JSON.parse(answer.text).result?.status?.state
          ),
          (state) => state === "TASK_STATE_COMPLETED",
          3000
        )
      }
      // Longer than a reader may leave more than the bound waiting, well within the time its dropped stream's
      // connection is kept for the end (`unwrittenEndMillis`): all read at once.
      yield* Effect.sleep(Duration.millis(slowReader.stallMillis + 500))
      const rests = yield* Effect.all(stalled.map(({ socket }) => readToEnd(socket)), { concurrency: "unbounded" })
      for (const rest of rests) {
        const events = rest.split("\n\n").filter((event) => event.includes("data: "))
        // What was in the socket's buffers, and at most the bound more: then the end, typed.
        expect(events.length).toBeLessThan(1000)
        const last = events.at(-1)!
        expect(last).toContain("fell more than 256 events behind")
        expect(JSON.parse(last.slice(last.indexOf("data: ") + 6)).error.code).toBe(-32004)
        expect(rest).not.toContain("TASK_STATE_COMPLETED")
      }
    }))

  it.scopedLive("on gRPC too: a stream read no more is ended with a typed status once its reader is a bound behind", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: chatty(1000, 8192), card })
      const stream = (yield* grpcStreams(server.urls.GRPC!))()
      let received = 0
      const ended = new Promise<Grpc.ServiceError | undefined>((resolve) => {
        stream.on("error", resolve)
        stream.on("end", () => resolve(undefined))
      })
      // The first event names the task; then the client reads no more.
      const taskId = yield* Effect.async<string>((resume) => {
        stream.once("data", (event: { payload?: { value?: { id?: string } } }) => {
          stream.pause()
          resume(Effect.succeed(event.payload?.value?.id ?? ""))
        })
      })
      stream.on("data", () => received++)
      yield* eventually(
        Effect.map(
          rpc(server.rpcUrl, "GetTask", { id: taskId }),
          (answer) => JSON.parse(answer.text).result?.status?.state
        ),
        (state) => state === "TASK_STATE_COMPLETED",
        3000
      )
      yield* Effect.sleep(Duration.millis(slowReader.stallMillis + 1000))
      stream.resume()
      const error = yield* Effect.promise(() => ended).pipe(Effect.timeout("30 seconds"))
      expect(received).toBeLessThan(999)
      expect(error?.details).toContain("fell more than 256 events behind")
    }))
})

/**
 * With both places of `maxInFlight: 2` held by stalled streams, a quick send
 * is shed; once their readers are dropped, though they never read again, it
 * is admitted.
 */
const admittedOnceDropped = (rpcUrl: string) =>
  Effect.gen(function*() {
    const quick = () =>
      rpc(rpcUrl, "SendMessage", {
        message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "quick" }] }
      })
    expect((yield* quick()).status).toBe(429)
    const admitted = yield* eventually(
      Effect.map(quick(), (answer) => answer.status),
      (status) => status !== 429,
      Math.ceil((slowReader.stallMillis + 3000) / 10)
    )
    expect(admitted).toBe(200)
  })

describe("A2AServer gRPC streams whose readers are dropped", () => {
  it.scopedLive("a gRPC reader that never reads again lets go of its place in maxInFlight once dropped", () =>
    Effect.gen(function*() {
      const server = yield* A2AServer.make({ agent: chatty(1000, 8192), card, maxInFlight: 2 })
      const open = yield* grpcStreams(server.urls.GRPC!)
      // Two streams that take their first event, then read no more, ever: their calls stay open.
      for (const _ of [1, 2]) {
        const stream = open()
        stream.on("error", () => undefined)
        // The client leaves at the end, as a real one would: its call ends then, not before.
        yield* Effect.addFinalizer(() => Effect.sync(() => stream.cancel()))
        yield* Effect.async<void>((resume) => {
          stream.once("data", () => {
            stream.pause()
            resume(Effect.void)
          })
        })
      }
      yield* admittedOnceDropped(server.rpcUrl)
    }))
})

describe("A2AServer HTTP streams whose readers are dropped", () => {
  for (const transport of ["JSONRPC", "HTTP+JSON"] as const) {
    it.scopedLive(`${transport}: a dropped reader lets go of its place in maxInFlight at the drop, and of its connection soon after`, () =>
      Effect.gen(function*() {
        const server = yield* A2AServer.make({
          agent: chatty(1000, 8192),
          card,
          maxInFlight: 2,
          transports: ["JSONRPC", "HTTP+JSON"]
        })
        const restPath = transport === "JSONRPC" ? undefined : new URL(server.urls["HTTP+JSON"]!).pathname
        const stalled = yield* Effect.all([1, 2].map(() => stalledStream(server.address.port, "go", restPath)))
        yield* admittedOnceDropped(server.rpcUrl)
        // By the time the end could have waited unwritten, the server has cut the connections: what the sockets
        // still hold comes, then the close, without the end of the chunked answer or the typed end.
        yield* Effect.sleep(Duration.millis(sse.unwrittenEndMillis + 1000))
        for (const { socket } of stalled) {
          const rest = yield* readToEnd(socket)
          expect(rest).not.toContain("\r\n0\r\n\r\n")
          expect(rest).not.toContain("fell more than 256 events behind")
        }
      }))
  }
})
