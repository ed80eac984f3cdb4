import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Layer, Redacted, Stream } from "effect"
import type * as Http from "node:http"
import * as RemoteAgent from "../src/RemoteAgent.js"
import * as FaultProxy from "./fixtures/faultProxy.js"
import { onlyTransportWorks } from "./fixtures/onlyTransport.js"
import { closedPort, json, listen } from "./fixtures/peers.js"
import { cardServer, cardWith, sdkPeers } from "./fixtures/transportPeers.js"

let agents = 0
const agentFor = (url: string, options: Partial<RemoteAgent.Options> = {}) =>
  RemoteAgent.make({ name: `rest-${++agents}`, url, timeout: "5 seconds", ...options })

/** The Status body of an A2A error, as the SDK's REST server writes it. */
const a2aStatus = (code: number, status: string, reason: string, message = reason) => ({
  error: {
    code,
    status,
    message,
    details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: "a2a-protocol.org", metadata: {} }]
  }
})

/** A raw HTTP+JSON peer: its card lists only HTTP+JSON at `/rest`, and `rest` answers every other request. */
const rawRest = (rest: (req: Http.IncomingMessage, res: Http.ServerResponse) => void) =>
  Effect.gen(function*() {
    const holder = { base: "" }
    const server = yield* listen((req, res) => {
      if (req.method === "GET" && req.url?.startsWith("/.well-known/agent-card.json")) {
        return json(res, 200, cardWith([{ protocolBinding: "HTTP+JSON", url: `${holder.base}/rest` }]))
      }
      req.resume()
      req.on("end", () => rest(req, res))
    })
    holder.base = server.url
    return server.url
  })

const task = (id: string, state: string, text = "") => ({
  id,
  contextId: "ctx-1",
  status: {
    state,
    message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text }] },
    timestamp: new Date().toISOString()
  },
  artifacts: [],
  history: []
})

describe("RemoteAgent over HTTP+JSON, against the SDK's Express restHandler", () => {
  it.scopedLive("a card that offers only HTTP+JSON works: every ending, a stream and getTask", () =>
    onlyTransportWorks("HTTP+JSON"))

  it.scopedLive("each A2A error read from the ErrorInfo is a ProtocolError with its A2A name, refused", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["HTTP+JSON"])
      const agent = yield* agentFor(peers.url)
      const missing = yield* Effect.flip(agent.getTask("no-such-task"))
      expect(missing).toMatchObject({
        reason: "ProtocolError",
        protocolError: "TaskNotFound",
        code: -32001,
        delivery: "Refused",
        status: 404,
        transport: "HTTP+JSON"
      })
      const done = yield* agent.send("complete")
      const notCancelable = yield* Effect.flip(agent.cancel(done.taskId))
      expect(notCancelable).toMatchObject({
        reason: "ProtocolError",
        protocolError: "TaskNotCancelable",
        delivery: "Refused"
      })
      // 1.0.1's statuses, and 1.0.0's where they differ (415, 409, 502): the reason decides, whatever the status.
      for (
        const [status, reason, name, delivery] of [
          [400, "UNSUPPORTED_OPERATION", "UnsupportedOperation", "Refused"],
          [400, "CONTENT_TYPE_NOT_SUPPORTED", "ContentTypeNotSupported", "Refused"],
          [415, "CONTENT_TYPE_NOT_SUPPORTED", "ContentTypeNotSupported", "Refused"],
          [409, "TASK_NOT_CANCELABLE", "TaskNotCancelable", "Refused"],
          [400, "VERSION_NOT_SUPPORTED", "VersionNotSupported", "Refused"],
          [400, "INVALID_PARAMS", "InvalidParams", "Refused"],
          [500, "INVALID_AGENT_RESPONSE", "InvalidAgentResponse", "Unknown"],
          [502, "INVALID_AGENT_RESPONSE", "InvalidAgentResponse", "Unknown"]
        ] as const
      ) {
        const url = yield* rawRest((_req, res) => json(res, status, a2aStatus(status, "FAILED_PRECONDITION", reason)))
        const error = yield* Effect.flip((yield* agentFor(url)).send("hello"))
        expect(error).toMatchObject({
          reason: "ProtocolError",
          protocolError: name,
          delivery,
          status,
          transport: "HTTP+JSON"
        })
      }
      // A 415 without an ErrorInfo (a proxy's, a server's that does not speak A2A's errors): the server did not act.
      const bare = yield* rawRest((_req, res) =>
        json(res, 415, { error: { code: 415, message: "unsupported media type" } })
      )
      expect(yield* Effect.flip((yield* agentFor(bare)).send("hello"))).toMatchObject({
        reason: "HttpStatus",
        status: 415,
        delivery: "Refused"
      })
    }))

  it.scopedLive("a 5xx whose body is the server's own A2A error is decided by that error; without one, HttpStatus, Unknown", () =>
    Effect.gen(function*() {
      const refusing = yield* rawRest((_req, res) =>
        json(res, 503, a2aStatus(503, "UNAVAILABLE", "UNSUPPORTED_OPERATION", "shutting down"), { "retry-after": "1" })
      )
      const refused = yield* Effect.flip((yield* agentFor(refusing)).send("hello"))
      expect(refused).toMatchObject({
        reason: "ProtocolError",
        protocolError: "UnsupportedOperation",
        delivery: "Refused",
        status: 503
      })
      expect(Duration.toMillis(refused.retryAfter!)).toBe(1000)
      const html = yield* rawRest((_req, res) => {
        res.writeHead(502, { "content-type": "text/html" })
        res.end("<html>Bad Gateway</html>")
      })
      expect(yield* Effect.flip((yield* agentFor(html)).send("hello"))).toMatchObject({
        reason: "HttpStatus",
        status: 502,
        delivery: "Unknown",
        transport: "HTTP+JSON"
      })
      const bare = yield* rawRest((_req, res) =>
        json(res, 500, { error: { code: 500, status: "INTERNAL", message: "boom", details: [] } })
      )
      expect(yield* Effect.flip((yield* agentFor(bare)).send("hello"))).toMatchObject({
        reason: "HttpStatus",
        status: 500,
        delivery: "Unknown"
      })
    }))

  it.scopedLive("429 is HttpStatus, refused, with Retry-After", () =>
    Effect.gen(function*() {
      const url = yield* rawRest((_req, res) =>
        json(res, 429, { error: { code: 429, status: "RESOURCE_EXHAUSTED", message: "slow down", details: [] } }, {
          "retry-after": "7"
        })
      )
      const error = yield* Effect.flip((yield* agentFor(url)).send("hello"))
      expect(error).toMatchObject({ reason: "HttpStatus", status: 429, delivery: "Refused", transport: "HTTP+JSON" })
      expect(Duration.toMillis(error.retryAfter!)).toBe(7000)
    }))

  it.scopedLive("a 200 whose body is no JSON, or not the expected answer: InvalidResponse, Unknown", () =>
    Effect.gen(function*() {
      const html = yield* rawRest((_req, res) => {
        res.writeHead(200, { "content-type": "text/html" })
        res.end("<html>hello</html>")
      })
      expect(yield* Effect.flip((yield* agentFor(html)).send("hello"))).toMatchObject({
        reason: "InvalidResponse",
        delivery: "Unknown"
      })
      const wrong = yield* rawRest((_req, res) => json(res, 200, { neither: "task nor message" }))
      expect(yield* Effect.flip((yield* agentFor(wrong)).send("hello"))).toMatchObject({
        reason: "InvalidResponse",
        delivery: "Unknown"
      })
    }))

  it.scopedLive("connection refused: ConnectionRefused, NotSent; reset after the request: ConnectionLost, Unknown", () =>
    Effect.gen(function*() {
      const closed = yield* closedPort
      const refused = yield* agentFor(closed, {
        card: cardWith([{ protocolBinding: "HTTP+JSON", url: `${closed}/rest` }])
      })
      expect(yield* Effect.flip(refused.send("hello"))).toMatchObject({
        reason: "ConnectionRefused",
        delivery: "NotSent",
        transport: "HTTP+JSON"
      })
      const peers = yield* sdkPeers(["HTTP+JSON"])
      const port = Number(new URL(peers.url).port)
      const proxy = yield* FaultProxy.make(() => ({ host: "127.0.0.1", port }))
      const agent = yield* agentFor(peers.url, {
        card: cardWith([{ protocolBinding: "HTTP+JSON", url: `${proxy.url}/rest` }])
      })
      proxy.setSchedule([FaultProxy.Fault.DropAnswer()])
      expect(yield* Effect.flip(agent.send("complete"))).toMatchObject({
        reason: "ConnectionLost",
        delivery: "Unknown"
      })
      expect(proxy.applied()).toEqual(["DropAnswer"])
    }))

  it.scopedLive("a call that outlives its timeout: Timeout, Unknown", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["HTTP+JSON"])
      const agent = yield* agentFor(peers.url, { timeout: "300 millis" })
      expect(yield* Effect.flip(agent.send("sleep 2000"))).toMatchObject({
        reason: "Timeout",
        delivery: "Unknown",
        transport: "HTTP+JSON"
      })
    }))

  it.scopedLive("a stream cut after its first event: one GetTask recovers the task's end", () =>
    Effect.gen(function*() {
      const paths: Array<string> = []
      const url = yield* rawRest((req, res) => {
        paths.push(`${req.method} ${req.url}`)
        if (req.url === "/rest/message:stream") {
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.write(`data: ${JSON.stringify({ task: task("t-1", "TASK_STATE_WORKING") })}\n\n`)
          setTimeout(() => res.socket?.destroy(), 50)
          return
        }
        json(res, 200, task("t-1", "TASK_STATE_COMPLETED", "recovered"))
      })
      const events = Chunk.toArray(yield* Stream.runCollect((yield* agentFor(url)).stream("hello")))
      expect(events.at(-1)).toMatchObject({ _tag: "Finished", outcome: { _tag: "Completed", text: "recovered" } })
      expect(paths).toEqual(["POST /rest/message:stream", "GET /rest/tasks/t-1"])
    }))

  it.scopedLive("an error event inside a stream after its first event is never a refusal", () =>
    Effect.gen(function*() {
      const url = yield* rawRest((req, res) => {
        if (req.url === "/rest/message:stream") {
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.write(`data: ${JSON.stringify({ task: task("t-1", "TASK_STATE_WORKING") })}\n\n`)
          res.end(
            `event: error\ndata: ${JSON.stringify(a2aStatus(400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"))}\n\n`
          )
          return
        }
        json(res, 404, a2aStatus(404, "NOT_FOUND", "TASK_NOT_FOUND"))
      })
      const error = yield* Effect.flip(Stream.runDrain((yield* agentFor(url)).stream("hello")))
      expect(error.delivery).toBe("Unknown")
      expect(error).toMatchObject({ reason: "ProtocolError", protocolError: "UnsupportedOperation" })
    }))

  it.scopedLive("the agent's headers, static and Redacted, the idempotency key and traceparent reach the server as headers", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["HTTP+JSON"])
      const agent = yield* agentFor(peers.url, {
        headers: { "x-tenant": "acme", authorization: Redacted.make("Bearer s3cret") }
      })
      yield* agent.send("complete", { idempotencyKey: "key-1", headers: { "x-call": "1" } }).pipe(
        Effect.withSpan("caller")
      )
      const sent = peers.seen().filter((s) => s.transport === "HTTP+JSON").at(-1)!.headers
      expect(sent).toMatchObject({
        "x-tenant": "acme",
        authorization: "Bearer s3cret",
        "idempotency-key": "key-1",
        "x-call": "1"
      })
      expect(sent.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
    }))
})

describe("HTTP+JSON through the HttpClient in context", () => {
  it.scopedLive("the user's client carries the card and every HTTP+JSON call, a stream's included; refusals read the same", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["HTTP+JSON"])
      const tenant = Layer.effect(
        HttpClient.HttpClient,
        Effect.map(
          HttpClient.HttpClient,
          HttpClient.mapRequest(HttpClientRequest.setHeader("x-through", "http-client"))
        )
      ).pipe(Layer.provide(FetchHttpClient.layer))
      const agent = yield* Effect.provide(agentFor(peers.url), tenant)
      yield* agent.send("complete")
      yield* Stream.runDrain(agent.stream("complete"))
      expect(yield* Effect.flip(agent.getTask("no-such-task"))).toMatchObject({
        protocolError: "TaskNotFound",
        delivery: "Refused",
        status: 404
      })
      const calls = peers.seen().filter((s) => s.transport === "HTTP+JSON")
      expect(calls.length).toBe(3)
      expect(calls.every((s) => s.headers["x-through"] === "http-client")).toBe(true)
      const closed = yield* closedPort
      const refused = yield* Effect.provide(
        agentFor(closed, { card: cardWith([{ protocolBinding: "HTTP+JSON", url: `${closed}/rest` }]) }),
        tenant
      )
      expect(yield* Effect.flip(refused.send("hello"))).toMatchObject({
        reason: "ConnectionRefused",
        delivery: "NotSent"
      })
    }))
})

describe("RemoteAgent's choice of a transport", () => {
  it.scopedLive("by default the card's order decides; a preference list picks among what the card offers", () =>
    Effect.gen(function*() {
      const peers = yield* sdkPeers(["JSONRPC", "HTTP+JSON", "GRPC"])
      const byCard = yield* agentFor(peers.url)
      yield* byCard.send("complete")
      expect(peers.seen().at(-1)!.transport).toBe("JSONRPC")
      expect(byCard.transport).toBe("JSONRPC")
      for (const transport of ["HTTP+JSON", "GRPC", "JSONRPC"] as const) {
        const agent = yield* agentFor(peers.url, { transports: [transport] })
        expect(agent.transport).toBe(transport)
        expect(yield* agent.send("complete")).toMatchObject({ _tag: "Completed" })
        expect(peers.seen().at(-1)!.transport).toBe(transport)
        const error = yield* Effect.flip(agent.getTask("no-such-task"))
        expect(error).toMatchObject({ transport, protocolError: "TaskNotFound", delivery: "Refused" })
      }
      // A preferred transport the card does not offer is skipped.
      const restOnly = yield* sdkPeers(["HTTP+JSON"])
      const skipping = yield* agentFor(restOnly.url, { transports: ["GRPC", "JSONRPC"] })
      yield* skipping.send("complete")
      expect(restOnly.seen().at(-1)!.transport).toBe("HTTP+JSON")
    }))

  it.scopedLive("a card that offers no binding this client speaks is NoCompatibleTransport, naming what it offered", () =>
    Effect.gen(function*() {
      const url = yield* cardServer((base) => cardWith([{ protocolBinding: "CARRIER-PIGEON", url: `${base}/coop` }]))
      const error = yield* Effect.flip(agentFor(url))
      expect(error).toMatchObject({ _tag: "AgentCardResolutionError", reason: "NoCompatibleTransport" })
      expect(error.message).toContain("CARRIER-PIGEON")
    }))
})
