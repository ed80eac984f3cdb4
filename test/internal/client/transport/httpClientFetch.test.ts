import { FetchHttpClient, HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Stream } from "effect"
import * as RemoteAgent from "../../../../src/RemoteAgent.js"
import * as FaultProxy from "../../../fixtures/faultProxy.js"
import { cardFor, closedPort, json, listen, rawPeer, rpcId, sdkPeer } from "../../../fixtures/peers.js"

let agents = 0
const agentFor = (url: string, options: Partial<RemoteAgent.Options> = {}) =>
  RemoteAgent.make({ name: `http-client-${++agents}`, url, timeout: "5 seconds", ...options })

/** `FetchHttpClient` with a middleware that counts the requests it carries. */
const counting = () => {
  const seen: Array<string> = []
  const layer = Layer.effect(
    HttpClient.HttpClient,
    Effect.map(
      HttpClient.HttpClient,
      HttpClient.tapRequest((request) =>
        Effect.sync(() => seen.push(`${request.method} ${new URL(request.url).pathname}`))
      )
    )
  ).pipe(Layer.provide(FetchHttpClient.layer))
  return { seen, layer }
}

describe("RemoteAgent through an HttpClient in context", () => {
  it.scopedLive("a client that ignores interruption still ends the call, a moment after its time: Timeout", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const deaf = Layer.succeed(
        HttpClient.HttpClient,
        HttpClient.make(() => Effect.uninterruptible(Effect.never))
      )
      const agent = yield* Effect.provide(
        agentFor(peer.url, { card: cardFor(`${peer.url}/rpc`), timeout: "200 millis" }),
        deaf
      )
      const started = Date.now()
      const error = yield* Effect.flip(agent.send("complete"))
      expect(error).toMatchObject({ reason: "Timeout", delivery: "Unknown" })
      expect(error.detail).toContain("did not stop when asked")
      // The call's time, then the grace its transport is given to stop.
      expect(Date.now() - started).toBeLessThan(3000)
    }))

  it.scopedLive("card, send, stream and getTask go through the HttpClient, the stream as it comes", () =>
    Effect.gen(function*() {
      const peer = yield* sdkPeer()
      const { layer, seen } = counting()
      const agent = yield* Effect.provide(agentFor(peer.url), layer)
      expect(Option.isSome(agent.card)).toBe(true)
      expect(seen).toEqual(["GET /.well-known/agent-card.json"])
      const outcome = yield* agent.send("complete seat 12A")
      expect(outcome._tag).toBe("Completed")
      expect(outcome.text).toBe("completed: seat 12A")
      const events = yield* Stream.runCollect(agent.stream("complete seat 14C"))
      const last = [...events].at(-1)
      expect(last?._tag === "Finished" && last.outcome._tag).toBe("Completed")
      const view = yield* agent.getTask(outcome.taskId)
      expect(view._tag).toBe("Completed")
      expect(seen).toEqual(["GET /.well-known/agent-card.json", "POST /rpc", "POST /rpc", "POST /rpc"])
    }))

  it.scopedLive("an event stream is handed over event by event, not buffered to its end", () =>
    Effect.gen(function*() {
      const first = yield* Deferred.make<void>()
      let resolveRelease = () => {}
      const release = {
        promise: new Promise<void>((resolve) => (resolveRelease = resolve)),
        resolve: () => resolveRelease()
      }
      const peer = yield* rawPeer((_req, res, body) => {
        const id = rpcId(body)
        const task = (state: string) => ({ id: "t1", contextId: "c1", status: { state } })
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id, result: { task: task("TASK_STATE_WORKING") } })}\n\n`)
        // The end waits for the client to have seen the first event: a buffered body would never get there.
        void release.promise.then(() =>
          res.end(`data: ${JSON.stringify({ jsonrpc: "2.0", id, result: { task: task("TASK_STATE_COMPLETED") } })}\n\n`)
        )
      })
      const agent = yield* Effect.provide(agentFor(peer.url), FetchHttpClient.layer)
      const events = yield* agent.stream("go").pipe(
        Stream.tap((event) =>
          event._tag === "Finished"
            ? Effect.void
            : Effect.zipRight(Deferred.succeed(first, undefined), Effect.sync(() => release.resolve()))
        ),
        Stream.runCollect,
        Effect.timeout("4 seconds")
      )
      expect(yield* Deferred.isDone(first)).toBe(true)
      const last = [...events].at(-1)
      expect(last?._tag === "Finished" && last.outcome._tag).toBe("Completed")
    }))

  it.scopedLive("the user's middleware runs: its header reaches the server with the card and every call", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const peer = yield* rawPeer(
        (req, res, body) => {
          seen.push(req.headers["x-through"])
          json(res, 200, { jsonrpc: "2.0", id: rpcId(body), error: { code: -32001, message: "no such task" } })
        },
        (req, res, base) => {
          seen.push(req.headers["x-through"])
          json(res, 200, cardFor(`${base}/rpc`))
        }
      )
      const client = Layer.effect(
        HttpClient.HttpClient,
        Effect.map(HttpClient.HttpClient, HttpClient.mapRequest(HttpClientRequest.setHeader("x-through", "middleware")))
      ).pipe(Layer.provide(FetchHttpClient.layer))
      const agent = yield* Effect.provide(agentFor(peer.url), client)
      const error = yield* Effect.flip(agent.getTask("t"))
      expect(error).toMatchObject({ reason: "ProtocolError", delivery: "Refused", code: -32001 })
      expect(seen).toEqual(["middleware", "middleware"])
    }))

  it.scopedLive("connection refused is NotSent; a server that resets mid-answer is Unknown", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const refused = yield* Effect.provide(agentFor(url, { card: cardFor(`${url}/rpc`) }), FetchHttpClient.layer)
      expect(yield* Effect.flip(refused.send("book"))).toMatchObject({
        reason: "ConnectionRefused",
        delivery: "NotSent"
      })

      const peer = yield* sdkPeer()
      const port = Number(new URL(peer.url).port)
      const proxy = yield* FaultProxy.make(() => ({ host: "127.0.0.1", port }))
      proxy.setSchedule([FaultProxy.Fault.DropAnswer()])
      const dropping = yield* Effect.provide(
        agentFor(proxy.url, { card: cardFor(`${proxy.url}/rpc`) }),
        FetchHttpClient.layer
      )
      const lost = yield* Effect.flip(dropping.send("complete seat 1A"))
      expect(lost).toMatchObject({ reason: "ConnectionLost", delivery: "Unknown" })
      expect(proxy.applied()).toEqual(["DropAnswer"])
      // The server got it and ran it.
      expect(peer.methods()).toEqual(["SendMessage"])
    }))

  it.scopedLive("a call's time limit interrupts the HttpClient's request: Timeout, Unknown", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer(() => undefined)
      const agent = yield* Effect.provide(agentFor(peer.url, { timeout: "300 millis" }), FetchHttpClient.layer)
      const started = Date.now()
      const error = yield* Effect.flip(Effect.timeout(agent.send("book"), "4 seconds"))
      expect(error).toMatchObject({ reason: "Timeout", delivery: "Unknown" })
      expect(Date.now() - started).toBeLessThan(3000)
    }))

  it.scopedLive("a body that stalls after its headers is cut at the call's time: Timeout, Unknown; a stream cut before its first event is ConnectionLost", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((req, res, body) => {
        if (body.includes("cut")) return req.socket.destroy()
        res.writeHead(200, { "content-type": "application/json", "content-length": "1000" })
        res.write(`{"jsonrpc":"2.0","id":${JSON.stringify(rpcId(body))},`)
      })
      const agent = yield* Effect.provide(agentFor(peer.url, { timeout: "300 millis" }), FetchHttpClient.layer)
      const started = Date.now()
      // Bounded here too: a body read that ignored the call's time would hang.
      expect(yield* Effect.flip(Effect.timeout(agent.send("book"), "4 seconds"))).toMatchObject({
        reason: "Timeout",
        delivery: "Unknown"
      })
      expect(Date.now() - started).toBeLessThan(3000)
      expect(yield* Effect.flip(Stream.runDrain(agent.stream("cut")))).toMatchObject({
        reason: "ConnectionLost",
        delivery: "Unknown"
      })
    }))

  it.scopedLive("the fetch path's checks hold: the size limit, the answer's id, the card's shape", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res, body) =>
        body.includes("big")
          ? json(res, 200, { jsonrpc: "2.0", id: rpcId(body), result: { pad: "x".repeat(5000) } })
          : json(res, 200, { jsonrpc: "2.0", id: 999_999, error: { code: -32001, message: "someone else's" } })
      )
      const agent = yield* Effect.provide(agentFor(peer.url, { maxResponseBytes: 1000 }), FetchHttpClient.layer)
      const big = yield* Effect.flip(agent.send("big"))
      expect(big).toMatchObject({ reason: "InvalidResponse", delivery: "Unknown" })
      expect(big.detail).toContain("exceeds 1000 bytes")
      const other = yield* Effect.flip(agent.send("other"))
      expect(other).toMatchObject({ reason: "InvalidResponse", delivery: "Unknown" })
      expect(other.detail).toContain("not request")
      const badCard = yield* rawPeer(() => undefined, (_req, res) => json(res, 200, { name: 7 }))
      const card = yield* Effect.flip(Effect.provide(agentFor(badCard.url), FetchHttpClient.layer))
      expect(card).toMatchObject({ reason: "InvalidCard" })
    }))

  it.scopedLive("a redirect is answered, not followed: the typed redirect error, and the target never asked", () =>
    Effect.gen(function*() {
      const target = yield* listen((_req, res) => json(res, 200, {}))
      const peer = yield* rawPeer((_req, res) => {
        res.writeHead(307, { location: `${target.url}/rpc` })
        res.end()
      })
      const agent = yield* Effect.provide(agentFor(peer.url), FetchHttpClient.layer)
      const error = yield* Effect.flip(agent.send("book"))
      expect(error).toMatchObject({ reason: "HttpStatus", delivery: "Unknown", status: 307 })
      expect(error.detail).toContain("answered with a redirect (HTTP 3xx), which is not followed")
      const streamed = yield* Effect.flip(Stream.runDrain(agent.stream("book")))
      expect(streamed).toMatchObject({ reason: "HttpStatus", delivery: "Unknown" })
      expect(target.requests()).toBe(0)
      expect(peer.methods()).toEqual(["SendMessage", "SendStreamingMessage"])
    }))

  it.scopedLive("a request the client could not build never left: NotSent; a client failure without proof is Unknown", () =>
    Effect.gen(function*() {
      const failing = (reason: "Encode" | "Transport") =>
        Layer.succeed(
          HttpClient.HttpClient,
          HttpClient.make((request) => Effect.fail(new HttpClientError.RequestError({ request, reason })))
        )
      const card = cardFor("http://127.0.0.1:1/rpc")
      const encode = yield* Effect.provide(agentFor("http://127.0.0.1:1", { card }), failing("Encode"))
      expect(yield* Effect.flip(encode.send("book"))).toMatchObject({ reason: "InvalidRequest", delivery: "NotSent" })
      const transport = yield* Effect.provide(agentFor("http://127.0.0.1:1", { card }), failing("Transport"))
      expect((yield* Effect.flip(transport.send("book"))).delivery).toBe("Unknown")
    }))

  it.scopedLive("a client that fails on error statuses still hands the answer over: a 429 is a refusal with its Retry-After", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((_req, res) => json(res, 429, { error: "slow down" }, { "retry-after": "7" }))
      const strict = Layer.effect(HttpClient.HttpClient, Effect.map(HttpClient.HttpClient, HttpClient.filterStatusOk))
        .pipe(
          Layer.provide(FetchHttpClient.layer)
        )
      const agent = yield* Effect.provide(agentFor(peer.url), strict)
      const error = yield* Effect.flip(agent.send("book"))
      expect(error).toMatchObject({ reason: "HttpStatus", delivery: "Refused", status: 429 })
      expect(error.retryAfter).toBeDefined()
    }))
})
