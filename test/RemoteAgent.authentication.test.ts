import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Logger, LogLevel, Option, Stream } from "effect"
import * as A2AClientError from "../src/A2AClientError.js"
import * as CircuitBreaker from "../src/CircuitBreaker.js"
import { answerStatus } from "../src/internal/client/call/answerStatus.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteEvent from "../src/RemoteEvent.js"
import * as RetryPolicy from "../src/RetryPolicy.js"
import { apiKey, serveAuthenticated } from "./fixtures/authenticatedServer.js"

const transports = ["JSONRPC", "HTTP+JSON", "GRPC"] as const

let agents = 0
// Metrics and breakers are per agent name: each agent gets its own.
const freshName = (transport: string) => `keyed-${transport}-${++agents}`

/** What a refusal for credentials is on `transport`: HTTP 401, or its gRPC twin. */
const refusedFor = (transport: (typeof transports)[number]) =>
  transport === "GRPC"
    ? { reason: "HttpStatus", delivery: "Refused", transport, grpcStatus: "UNAUTHENTICATED" }
    : { reason: "HttpStatus", delivery: "Refused", transport, status: 401 }

// The server logs each refusal as a warning: not this file's concern.
const quietServer = serveAuthenticated.pipe(Logger.withMinimumLogLevel(LogLevel.Error))

/** A client of `url` over `transport` only, under a name of its own. */
const agentOn = (url: string, transport: (typeof transports)[number], headers?: Record<string, string>) =>
  RemoteAgent.make({
    name: freshName(transport),
    url,
    timeout: "5 seconds",
    transports: [transport],
    ...(headers === undefined ? {} : { headers })
  })

const lastOutcome = (events: Chunk.Chunk<RemoteEvent.RemoteEvent>) => {
  const last = Chunk.unsafeLast(events)
  return last._tag === "Finished" ? last.outcome : undefined
}

describe("a server that authenticates its callers", () => {
  it.scopedLive("the card is public: make resolves it without credentials, on every transport", () =>
    Effect.gen(function*() {
      const { refused, server } = yield* quietServer
      for (const transport of transports) {
        const agent = yield* agentOn(server.url, transport)
        expect(agent.transport).toBe(transport)
        expect(Option.map(agent.card, (card) => card.name)).toEqual(Option.some("guarded"))
      }
      expect(refused()).toBe(0)
    }))

  it.scopedLive("without credentials, send, stream and getTask are HttpStatus 401 (gRPC UNAUTHENTICATED), Refused, on every transport", () =>
    Effect.gen(function*() {
      const { refused, server } = yield* quietServer
      for (const transport of transports) {
        const agent = yield* agentOn(server.url, transport)
        const errors = [
          yield* Effect.flip(agent.send("complete x")),
          yield* Effect.flip(Stream.runDrain(agent.stream("complete x"))),
          yield* Effect.flip(agent.getTask(crypto.randomUUID()))
        ]
        for (const [i, error] of errors.entries()) {
          expect(error, `${transport} call ${i}`).toMatchObject(refusedFor(transport))
          // Retries and the breaker read the same status on every transport.
          expect(answerStatus(error), `${transport} call ${i}`).toBe(401)
          expect(error.protocolError).toBeUndefined()
        }
      }
      expect(refused()).toBe(transports.length * 3)
    }))

  it.scopedLive("with the key in headers, send, stream and getTask complete on every transport", () =>
    Effect.gen(function*() {
      const { refused, server } = yield* quietServer
      for (const transport of transports) {
        const agent = yield* agentOn(server.url, transport, { "x-api-key": apiKey })
        const sent = yield* agent.send("complete sent")
        expect(sent, transport).toMatchObject({ _tag: "Completed", text: "sent" })
        const streamed = lastOutcome(yield* Stream.runCollect(agent.stream("complete streamed")))
        expect(streamed, transport).toMatchObject({ _tag: "Completed", text: "streamed" })
        expect(yield* agent.getTask(sent.taskId), transport).toMatchObject({ _tag: "Completed", taskId: sent.taskId })
      }
      expect(refused()).toBe(0)
    }))

  it.scopedLive("RetryPolicy never resends a refusal for credentials, keyed or not, blocking or streaming", () =>
    Effect.gen(function*() {
      const { refused, server } = yield* quietServer
      for (const transport of transports) {
        const agent = yield* agentOn(server.url, transport)
        const before = refused()
        const keyed = yield* Effect.flip(
          agent.send("complete x", { idempotencyKey: crypto.randomUUID() }).pipe(
            RetryPolicy.retry({ maxAttempts: 4, base: "1 millis" }, { idempotent: true })
          )
        )
        expect(keyed, transport).toMatchObject({ ...refusedFor(transport), attempts: 1 })
        const plain = yield* Effect.flip(
          agent.send("complete x").pipe(RetryPolicy.retry({ maxAttempts: 4, base: "1 millis" }, { idempotent: false }))
        )
        expect(plain, transport).toMatchObject({ ...refusedFor(transport), attempts: 1 })
        const streamed = yield* Effect.flip(Stream.runDrain(
          agent.stream("complete x", { idempotencyKey: crypto.randomUUID() }).pipe(
            RetryPolicy.retryStream({ maxAttempts: 4, base: "1 millis" }, { idempotent: true })
          )
        ))
        expect(streamed, transport).toMatchObject({ ...refusedFor(transport), attempts: 1 })
        // The server saw each call once.
        expect(refused() - before, transport).toBe(3)
      }
    }))

  it.scopedLive("refusals for credentials never open the circuit breaker: the remote answered, and is up", () =>
    Effect.gen(function*() {
      const { refused, server } = yield* quietServer
      for (const transport of transports) {
        const agent = yield* agentOn(server.url, transport)
        // One failure that counts would open it.
        const breaker = yield* CircuitBreaker.make(agent.name, {
          trip: CircuitBreaker.consecutiveFailures(1),
          openDuration: "1 minute"
        })
        const before = refused()
        for (let i = 0; i < 3; i++) {
          const error = yield* Effect.flip(breaker.protect(agent.send("complete x")))
          expect(error, transport).toBeInstanceOf(A2AClientError.A2AClientError)
          expect(error, transport).toMatchObject(refusedFor(transport))
        }
        expect(yield* breaker.state, transport).toBe("Closed")
        // Every call reached the server: none was rejected by the breaker.
        expect(refused() - before, transport).toBe(3)
      }
    }))
})
