import { TaskState } from "@a2a-js/sdk"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Exit, FastCheck, Fiber, Option, Schema, Stream } from "effect"
import type * as Http from "node:http"
import * as A2AClientError from "../src/A2AClientError.js"
import { classifyCall } from "../src/internal/client/call/classify.js"
import * as grpcTransport from "../src/internal/client/transport/grpc.js"
import * as restTransport from "../src/internal/client/transport/rest.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { handlers } from "./fixtures/matchers.js"
import { cardFor, closedPort, json, rawPeer, rpcId, sdkPeer } from "./fixtures/peers.js"

const agentAt = (url: string, options: Partial<RemoteAgent.Options> = {}) =>
  RemoteAgent.make({ name: "raw", url, timeout: "3 seconds", ...options })

const sendError = (agent: RemoteAgent.RemoteAgent, text = "hello") => Effect.flip(agent.send(text))

const task = (id: string, state: TaskState, text = "") => ({
  id,
  contextId: "ctx-1",
  status: {
    state: TaskState[state],
    message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text }] },
    timestamp: new Date().toISOString()
  },
  artifacts: [],
  history: []
})

const sse = (res: Http.ServerResponse) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  return (id: unknown, result: unknown) => res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id, result })}\n\n`)
}

describe("classification of what @a2a-js/sdk 1.3 throws, against real servers", () => {
  it.scopedLive("connection refused: ConnectionRefused, NotSent", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const agent = yield* agentAt(url, { card: cardFor(`${url}/rpc`) })
      const error = yield* sendError(agent)
      expect(error).toMatchObject({
        _tag: "A2AClientError",
        reason: "ConnectionRefused",
        delivery: "NotSent",
        operation: "SendMessage"
      })
    }))

  it.scopedLive("HTTP 500 with an HTML body: HttpStatus 500, Unknown", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res) => {
        res.writeHead(500, { "content-type": "text/html" })
        res.end("<html><body>Internal Server Error</body></html>")
      })
      const error = yield* sendError(yield* agentAt(peer.url))
      expect(error).toMatchObject({ reason: "HttpStatus", status: 500, delivery: "Unknown" })
    }))

  it.scopedLive("HTTP 429 and 503 carry Retry-After; 429 is a refusal, 503 without a JSON-RPC error is not", () =>
    Effect.gen(function*() {
      for (const status of [429, 503]) {
        const peer = yield* rawPeer((_req, res) => {
          res.writeHead(status, { "content-type": "text/plain", "retry-after": "7" })
          res.end("slow down")
        })
        const error = yield* sendError(yield* agentAt(peer.url))
        // Without a JSON-RPC error, a 4xx is the server's refusal, a 5xx may be a proxy's after the server got it.
        expect(error).toMatchObject({ reason: "HttpStatus", status, delivery: status === 429 ? "Refused" : "Unknown" })
        expect(error.retryAfter && Duration.toMillis(error.retryAfter)).toBe(7000)
      }
      // More digits than a number holds: no delay anyone can wait, so none, and still the typed error.
      const huge = yield* rawPeer((_req, res) => {
        res.writeHead(503, { "content-type": "text/plain", "retry-after": "9".repeat(400) })
        res.end("slow down")
      })
      const error = yield* sendError(yield* agentAt(huge.url))
      expect(error).toMatchObject({ reason: "HttpStatus", status: 503, delivery: "Unknown" })
      expect(error.retryAfter).toBeUndefined()
    }))

  it.scopedLive("a JSON-RPC error whose code is not an integer: InvalidResponse, for a send and a stream", () =>
    Effect.gen(function*() {
      for (const code of [1.5, 1e20]) {
        const peer = yield* rawPeer((_req, res, body) =>
          json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code, message: "odd" } })
        )
        const agent = yield* agentAt(peer.url)
        expect(yield* sendError(agent)).toMatchObject({
          reason: "InvalidResponse",
          delivery: "Unknown",
          operation: "SendMessage"
        })
        const streamed = yield* Effect.flip(Stream.runDrain(agent.stream("go")))
        expect(streamed).toMatchObject({
          reason: "InvalidResponse",
          delivery: "Unknown",
          operation: "SendStreamingMessage"
        })
      }
    }))

  it.scopedLive("a JSON-RPC error for each A2A code: ProtocolError with code and name; Refused unless the server may have acted", () =>
    Effect.gen(function*() {
      const codes = Object.keys(A2AClientError.protocolErrorNames).map(Number)
      let code = 0
      const peer = yield* rawPeer((_req, res, body) =>
        json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code, message: `boom ${code}` } })
      )
      const agent = yield* agentAt(peer.url)
      // InternalError may have failed midway, InvalidAgentResponse means the agent ran; every other code refuses.
      const actedOn = [-32603, -32006]
      for (const c of codes) {
        code = c
        const error = yield* sendError(agent)
        expect(error).toMatchObject({
          reason: "ProtocolError",
          code: c,
          protocolError: A2AClientError.protocolErrorName(c),
          delivery: actedOn.includes(c) ? "Unknown" : "Refused"
        })
      }
      // A code outside the specification says nothing of what ran.
      code = -32099
      expect(yield* sendError(agent)).toMatchObject({
        reason: "ProtocolError",
        code: -32099,
        protocolError: "Unknown",
        delivery: "Unknown"
      })
      expect(A2AClientError.protocolErrorName(-32001)).toBe("TaskNotFound")
      expect(A2AClientError.protocolErrorName(-32009)).toBe("VersionNotSupported")
    }))

  it.scopedLive("a JSON-RPC error inside a non-2xx answer keeps its code and status; the code decides its delivery", () =>
    Effect.gen(function*() {
      const answers: Array<[number, number]> = [[400, -32602], [503, -32004], [503, -32603]]
      let answer = answers[0]!
      const peer = yield* rawPeer((_req, res, body) =>
        json(res, answer[0], { jsonrpc: "2.0", id: rpcId(body), error: { code: answer[1], message: "no" } })
      )
      const agent = yield* agentAt(peer.url)
      const error = yield* sendError(agent)
      expect(error).toMatchObject({
        reason: "ProtocolError",
        code: -32602,
        protocolError: "InvalidParams",
        status: 400,
        delivery: "Refused"
      })
      expect(error.message).toBe(
        "raw: SendMessage failed (ProtocolError HTTP 400 -32602 InvalidParams, request refused, nothing ran): RequestMalformedError: no"
      )
      const told = A2AClientError.matchDelivery({
        NotSent: () => "not sent",
        Refused: () => "refused",
        Unknown: () => "unknown"
      })
      expect(told(error)).toBe("refused")
      answer = answers[1]!
      expect(yield* sendError(agent)).toMatchObject({ code: -32004, status: 503, delivery: "Refused" })
      answer = answers[2]!
      expect(yield* sendError(agent)).toMatchObject({ code: -32603, status: 503, delivery: "Unknown" })
    }))

  it.scopedLive("a JSON-RPC error for another request is no answer: only its status speaks, sent, streamed or read", () =>
    Effect.gen(function*() {
      let status = 200
      let id: (body: string) => unknown = (body) => Number(rpcId(body)) + 1
      const peer = yield* rawPeer((_req, res, body) =>
        json(res, status, { jsonrpc: "2.0", id: id(body), error: { code: -32004, message: "not yours" } })
      )
      const agent = yield* agentAt(peer.url)
      const another = { reason: "InvalidResponse", delivery: "Unknown" }
      expect(yield* sendError(agent)).toMatchObject({ ...another, detail: expect.stringContaining("not request") })
      expect(yield* Effect.flip(Stream.runDrain(agent.stream("go")))).toMatchObject(another)
      expect(yield* Effect.flip(agent.getTask("t-1"))).toMatchObject(another)
      // No id at all is no answer either; a null id is a server that could not read the request's.
      id = () => undefined
      expect(yield* sendError(agent)).toMatchObject(another)
      id = () => null
      expect(yield* sendError(agent)).toMatchObject({ reason: "ProtocolError", code: -32004, delivery: "Refused" })
      // Under an error status, the status is the server's own word on this request.
      id = (body) => `${String(rpcId(body))}-other`
      for (const [answered, delivery] of [[400, "Refused"], [503, "Unknown"]] as const) {
        status = answered
        expect(yield* sendError(agent)).toMatchObject({ reason: "HttpStatus", status: answered, delivery })
        expect(yield* Effect.flip(Stream.runDrain(agent.stream("go")))).toMatchObject({
          reason: "HttpStatus",
          status: answered,
          delivery
        })
      }
    }))

  it.scopedLive("a 4xx whose body is no JSON-RPC error is a refusal however the SDK reads it, sent or streamed", () =>
    Effect.gen(function*() {
      const answers: Array<[number, string]> = [
        [401, JSON.stringify({ error: "invalid_token" })],
        [429, JSON.stringify({ error: { code: 429, message: "rate limited" } })],
        [403, JSON.stringify({ jsonrpc: "2.0", id: 1, error: { message: "forbidden" } })],
        [429, "null"]
      ]
      let answer = answers[0]!
      const peer = yield* rawPeer((_req, res) => {
        res.writeHead(answer[0], { "content-type": "application/json" })
        res.end(answer[1])
      })
      const agent = yield* agentAt(peer.url)
      for (const next of answers) {
        answer = next
        const expected = { reason: "HttpStatus", status: next[0], delivery: "Refused" }
        expect(yield* sendError(agent)).toMatchObject(expected)
        expect(yield* Effect.flip(Stream.runDrain(agent.stream("go")))).toMatchObject(expected)
      }
    }))

  it.scopedLive("an error carried in a stream's event is never a refusal, first event or not: the run may have begun", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => {
        sse(res)
        res.end(
          `data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId(body), error: { code: -32004, message: "no" } })}\n\n`
        )
      })
      expect(yield* Effect.flip(Stream.runDrain((yield* agentAt(peer.url)).stream("go")))).toMatchObject({
        reason: "ProtocolError",
        code: -32004,
        delivery: "Unknown"
      })
      // The SDK's server runs the agent, then refuses (-32004) a turn that does not open with the task.
      const sdk = yield* agentAt((yield* sdkPeer()).url)
      expect(yield* Effect.flip(Stream.runDrain(sdk.stream("status-first")))).toMatchObject({
        reason: "ProtocolError",
        code: -32004,
        delivery: "Unknown"
      })
    }))

  it.scopedLive("a 200 with malformed JSON: InvalidResponse", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end("{\"jsonrpc\": \"2.0\", \"result\": {")
      })
      const error = yield* sendError(yield* agentAt(peer.url))
      expect(error).toMatchObject({ reason: "InvalidResponse", delivery: "Unknown" })
    }))

  it.scopedLive("a binary body: InvalidResponse", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res) => {
        res.writeHead(200, { "content-type": "application/octet-stream" })
        res.end(Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]))
      })
      expect((yield* sendError(yield* agentAt(peer.url))).reason).toBe("InvalidResponse")
    }))

  it.scopedLive("a huge body is refused: InvalidResponse", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(`{"jsonrpc":"2.0","id":1,"result":"${"x".repeat(2 * 1024 * 1024)}"}`)
      })
      const error = yield* sendError(yield* agentAt(peer.url, { maxResponseBytes: 1024 * 1024 }))
      expect(error.reason).toBe("InvalidResponse")
      expect(error.detail).toContain("exceeds")
      // Calling itself an event stream does not spare a blocking answer, or a refusal of a stream, the limit.
      for (const status of [200, 500]) {
        const claimed = yield* rawPeer((_req, res) => {
          res.writeHead(status, { "content-type": "text/event-stream" })
          res.write(`{"jsonrpc":"2.0","id":1,"result":"`)
          res.end(`${"x".repeat(2 * 1024 * 1024)}"}`)
        })
        const agent = yield* agentAt(claimed.url, { maxResponseBytes: 1024 * 1024 })
        if (status === 200) {
          expect(yield* sendError(agent)).toMatchObject({
            reason: "InvalidResponse",
            detail: expect.stringContaining("exceeds")
          })
        } else {
          const streamed = yield* Effect.flip(Stream.runDrain(agent.stream("go")))
          expect(streamed.detail).toContain("exceeds")
        }
      }
    }))

  it.scopedLive("a response with missing fields: InvalidResponse", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => json(res, 200, { jsonrpc: "2.0", id: rpcId(body), result: {} }))
      expect((yield* sendError(yield* agentAt(peer.url))).reason).toBe("InvalidResponse")
    }))

  it.scopedLive("a task in an unrecognised state: InvalidResponse", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) =>
        json(res, 200, {
          jsonrpc: "2.0",
          id: rpcId(body),
          result: { task: { ...task("t-1", TaskState.TASK_STATE_COMPLETED), status: { state: "TASK_STATE_EXPLODED" } } }
        })
      )
      const error = yield* sendError(yield* agentAt(peer.url))
      expect(error).toMatchObject({ reason: "InvalidResponse", taskId: "t-1" })
      expect(error.detail).toContain("unrecognised state")
    }))

  it.scopedLive("a slow server and a short timeout: Timeout, Unknown", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => {
        const timer = setTimeout(() => json(res, 200, { jsonrpc: "2.0", id: rpcId(body), result: {} }), 5000)
        res.on("close", () => clearTimeout(timer))
      })
      const error = yield* sendError(yield* agentAt(peer.url, { timeout: "200 millis" }))
      expect(error).toMatchObject({ reason: "Timeout", delivery: "Unknown" })
    }))

  it.scopedLive("a server that destroys the socket before answering: ConnectionLost, Unknown", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((req) => req.socket.destroy())
      const error = yield* sendError(yield* agentAt(peer.url))
      expect(error).toMatchObject({ reason: "ConnectionLost", delivery: "Unknown" })
    }))

  it.scopedLive("interruption aborts the request on the wire", () =>
    Effect.gen(function*() {
      let closed = false
      const peer = yield* rawPeer((_req, res) => {
        res.on("close", () => {
          closed = true
        })
      })
      const agent = yield* agentAt(peer.url)
      const fiber = yield* Effect.fork(agent.send("hang"))
      for (let i = 0; i < 100 && peer.requests() < 2; i++) yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      for (let i = 0; i < 100 && !closed; i++) yield* Effect.sleep("10 millis")
      expect(closed).toBe(true)
    }))

  it.scopedLive("an SSE stream cut after the first event: StreamInterrupted with the task id", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((req, res, body) => {
        const method = (JSON.parse(body) as { method: string }).method
        if (method === "GetTask") {
          return json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32001, message: "gone" } })
        }
        sse(res)(rpcId(body), { task: task("t-cut", TaskState.TASK_STATE_WORKING) })
        setTimeout(() => req.socket.destroy(), 20)
      })
      const error = yield* Effect.flip(Stream.runDrain((yield* agentAt(peer.url)).stream("go")))
      expect(error).toMatchObject({
        reason: "StreamInterrupted",
        delivery: "Unknown",
        taskId: "t-cut",
        operation: "SendStreamingMessage"
      })
    }))

  it.scopedLive("a stream cut, then GetTask recovers the real final state", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((req, res, body) => {
        const method = (JSON.parse(body) as { method: string }).method
        if (method === "GetTask") {
          return json(res, 200, {
            jsonrpc: "2.0",
            id: rpcId(body),
            result: task("t-rec", TaskState.TASK_STATE_FAILED, "Agent execution failed. (error_id: aaaaaaaaaaaa)")
          })
        }
        sse(res)(rpcId(body), { task: task("t-rec", TaskState.TASK_STATE_WORKING) })
        setTimeout(() => req.socket.destroy(), 20)
      })
      const events = yield* Stream.runCollect((yield* agentAt(peer.url)).stream("go"))
      const last = Chunk.last(events).pipe(Option.getOrThrow)
      expect(last._tag).toBe("Finished")
      if (last._tag !== "Finished") return
      expect(last.outcome._tag).toBe("Failed")
      expect(last.outcome._tag === "Failed" && Option.getOrNull(last.outcome.errorId)).toBe("aaaaaaaaaaaa")
    }))

  it.scopedLive("a stream that ends cleanly before a final state: its task is polled, then Timeout if it does not end", () =>
    Effect.gen(function*() {
      let polls = 0
      const peer = yield* rawPeer((_req, res, body) => {
        const method = (JSON.parse(body) as { method: string }).method
        if (method === "GetTask") {
          polls++
          return json(res, 200, {
            jsonrpc: "2.0",
            id: rpcId(body),
            result: task("t-end", TaskState.TASK_STATE_WORKING)
          })
        }
        sse(res)(rpcId(body), { task: task("t-end", TaskState.TASK_STATE_WORKING) })
        res.end()
      })
      const error = yield* Effect.flip(
        Stream.runDrain((yield* agentAt(peer.url)).stream("go", { timeout: "400 millis" }))
      )
      expect(error).toMatchObject({
        reason: "Timeout",
        delivery: "Unknown",
        taskId: "t-end",
        operation: "SendStreamingMessage"
      })
      expect(error.detail).toContain("did not end within 400ms")
      expect(polls).toBeGreaterThan(1)
    }))

  it.scopedLive("an SSE error event: ProtocolError from its typed cause, never Refused once events came", () =>
    Effect.gen(function*() {
      let code = -32603
      const peer = yield* rawPeer((_req, res, body) => {
        const send = sse(res)
        send(rpcId(body), { task: task("t-err", TaskState.TASK_STATE_WORKING) })
        res.end(
          `data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId(body), error: { code, message: "internal" } })}\n\n`
        )
      })
      const agent = yield* agentAt(peer.url)
      const error = yield* Effect.flip(Stream.runDrain(agent.stream("go")))
      expect(error).toMatchObject({
        reason: "ProtocolError",
        code: -32603,
        protocolError: "InternalError",
        delivery: "Unknown"
      })
      // The task exists and may be running: a refusal's code says nothing of it.
      code = -32004
      expect(yield* Effect.flip(Stream.runDrain(agent.stream("go")))).toMatchObject({
        code: -32004,
        delivery: "Unknown"
      })
    }))

  it.scopedLive("a stream that goes silent: Timeout", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) => {
        sse(res)(rpcId(body), { task: task("t-idle", TaskState.TASK_STATE_WORKING) })
      })
      const error = yield* Effect.flip(
        Stream.runDrain((yield* agentAt(peer.url, { timeout: "300 millis" })).stream("go"))
      )
      expect(error).toMatchObject({ reason: "Timeout", delivery: "Unknown", taskId: "t-idle" })
    }))
})

const oddValues = FastCheck.oneof(
  FastCheck.anything(),
  FastCheck.string().map((message) => new Error(message)),
  FastCheck.record({ code: FastCheck.string(), message: FastCheck.anything(), name: FastCheck.anything() }),
  FastCheck.tuple(FastCheck.string(), FastCheck.anything()).map(([m, cause]) => new Error(m, { cause })),
  FastCheck.constantFrom("ECONNREFUSED", "UND_ERR_SOCKET", "ECONNRESET", "X").map((code) =>
    new TypeError("fetch failed", { cause: Object.assign(new Error(code), { code }) })
  ),
  FastCheck.integer().map((envelopeCode) => Object.assign(new Error("rpc"), { envelopeCode }))
)

describe("classification is total", () => {
  it.prop(
    "any thrown value yields a typed error",
    [oddValues, FastCheck.boolean(), FastCheck.boolean()],
    ([value, sent, started]) => {
      const error = classifyCall(value, {
        agent: "a",
        operation: "SendMessage",
        record: { sent },
        streamStarted: started
      })
      expect(error).toBeInstanceOf(A2AClientError.A2AClientError)
      expect(Schema.is(A2AClientError.Reason)(error.reason)).toBe(true)
      if (!sent) expect(error.delivery === "NotSent" || error.reason !== "Timeout").toBe(true)
    }
  )

  it.effect("any thrown value yields a typed error, on HTTP+JSON's and gRPC's own readings too", () =>
    Effect.gen(function*() {
      const { binding: grpc } = yield* Effect.promise(() => grpcTransport.make())
      // What the SDK's gRPC and REST errors carry, with anything in each place.
      const transportLike = FastCheck.record({
        transport: FastCheck.constantFrom("grpc", "rest", "jsonrpc", 7),
        status: FastCheck.oneof(FastCheck.integer({ min: -2, max: 20 }), FastCheck.anything()),
        statusCode: FastCheck.oneof(FastCheck.integer({ min: 100, max: 599 }), FastCheck.anything()),
        message: FastCheck.anything(),
        cause: FastCheck.oneof(
          oddValues,
          FastCheck.record({ details: FastCheck.anything(), code: FastCheck.anything() })
        )
      })
      const signal = FastCheck.constantFrom(
        undefined,
        AbortSignal.abort(),
        AbortSignal.abort(new DOMException("late", "TimeoutError"))
      )
      for (const binding of [restTransport.binding, grpc]) {
        FastCheck.assert(
          FastCheck.property(
            FastCheck.oneof(oddValues, transportLike),
            FastCheck.boolean(),
            FastCheck.boolean(),
            signal,
            (value, sent, started, aborted) => {
              const error = classifyCall(value, {
                agent: "a",
                operation: "SendMessage",
                binding,
                signal: aborted,
                record: { sent },
                streamStarted: started
              })
              expect(error).toBeInstanceOf(A2AClientError.A2AClientError)
              expect(error.transport).toBe(binding.transport)
              if (started) expect(error.delivery).not.toBe("Refused")
            }
          ),
          { numRuns: 300 }
        )
      }
    }))

  it("odd causes: cycles, throwing getters, null prototypes", () => {
    const cyclic: { cause?: unknown; message: string } = { message: "loop" }
    cyclic.cause = cyclic
    const hostile = new Proxy({}, {
      get() {
        throw new Error("no")
      }
    })
    const throwingGetter = Object.defineProperty(new Error("x"), "cause", {
      get() {
        throw new Error("nope")
      }
    })
    for (const value of [cyclic, hostile, throwingGetter, Object.create(null), Symbol("s"), 10n, () => 1]) {
      const error = classifyCall(value, { agent: "a", operation: "GetTask", record: undefined, streamStarted: false })
      expect(error._tag).toBe("A2AClientError")
    }
  })

  it("a connection refused is NotSent even when fetch was called", () => {
    const refused = new TypeError("fetch failed", {
      cause: Object.assign(new Error("connect"), { code: "ECONNREFUSED" })
    })
    expect(
      classifyCall(refused, { agent: "a", operation: "SendMessage", record: { sent: true }, streamStarted: false })
    )
      .toMatchObject({ reason: "ConnectionRefused", delivery: "NotSent" })
  })

  it("an abort before the request was handed to fetch is NotSent; after, Unknown", () => {
    const abort = new DOMException("aborted", "AbortError")
    const ctx = { agent: "a", operation: "SendMessage", streamStarted: false } as const
    expect(classifyCall(abort, { ...ctx, record: { sent: false } })).toMatchObject({
      reason: "Aborted",
      delivery: "NotSent"
    })
    expect(classifyCall(abort, { ...ctx, record: { sent: true } })).toMatchObject({
      reason: "Aborted",
      delivery: "Unknown"
    })
  })
})

describe("A2AClientError", () => {
  it.prop("survives a Schema encode/decode round trip", [A2AClientError.A2AClientError], ([error]) => {
    const encoded = Schema.encodeSync(A2AClientError.A2AClientError)(error)
    const wire = JSON.parse(JSON.stringify(encoded))
    const decoded = Schema.decodeUnknownSync(A2AClientError.A2AClientError)(wire)
    expect(decoded).toBeInstanceOf(A2AClientError.A2AClientError)
    expect(Schema.encodeSync(A2AClientError.A2AClientError)(decoded)).toEqual(wire)
    expect(decoded.reason).toBe(error.reason)
    expect(decoded.delivery).toBe(error.delivery)
  })

  it.prop("matchReason and matchDelivery run the handler of the error's own reason and delivery", [
    A2AClientError.A2AClientError
  ], ([error]) => {
    // Each handler answers its key and the error it got, so a swapped or shared handler shows.
    const byReason = A2AClientError.matchReason(handlers(A2AClientError.Reason.literals))
    const byDelivery = A2AClientError.matchDelivery(handlers(A2AClientError.Delivery.literals))
    expect(byReason(error)).toEqual([error.reason, error])
    expect(byDelivery(error)).toEqual([error.delivery, error])
  })

  it("matchReason is exhaustive and dispatches on reason", () => {
    const error = new A2AClientError.A2AClientError({
      agent: "a",
      operation: "SendMessage",
      reason: "HttpStatus",
      delivery: "Unknown",
      detail: "x",
      status: 502
    })
    const describe = A2AClientError.matchReason({
      ConnectionRefused: () => "refused",
      ConnectionLost: () => "lost",
      Timeout: () => "timeout",
      Aborted: () => "aborted",
      HttpStatus: (e) => `http ${e.status}`,
      ProtocolError: () => "protocol",
      InvalidResponse: () => "invalid",
      StreamInterrupted: () => "cut",
      Unavailable: () => "unavailable",
      InvalidRequest: () => "not json"
    })
    expect(describe(error)).toBe("http 502")
    expect(error.message).toContain("HTTP 502")
  })

  it.effect("interrupting a call is not an error", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.interrupt)
      expect(Exit.isInterrupted(exit)).toBe(true)
    }))
})
