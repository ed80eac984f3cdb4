import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger, Option, Schedule, Schema } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentCardResolutionError from "../src/AgentCardResolutionError.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import type * as RemoteOutcome from "../src/RemoteOutcome.js"
import { handlers } from "./fixtures/matchers.js"
import { cardFor, closedPort, json, rawPeer } from "./fixtures/peers.js"
import { captureLogs } from "./fixtures/serverAgents.js"

const resolve = (url: string, options: Partial<RemoteAgent.Options> = {}) =>
  Effect.flip(RemoteAgent.make({ name: "booking", url, cardTimeout: "2 seconds", ...options }))

const cardServer = (answer: Parameters<typeof rawPeer>[1]) => rawPeer((_req, res) => res.end(), answer)

describe("card resolution fails start-up with a typed error", () => {
  it.scopedLive("unreachable", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const error = yield* resolve(url)
      expect(error).toMatchObject({ _tag: "AgentCardResolutionError", reason: "Unreachable", agent: "booking", url })
      expect(error.message).toContain("check that the agent is running")
    }))

  it.scopedLive("404", () =>
    Effect.gen(function*() {
      const peer = yield* cardServer((_req, res) => {
        res.writeHead(404)
        res.end("not here")
      })
      expect(yield* resolve(peer.url)).toMatchObject({ reason: "HttpStatus", status: 404 })
    }))

  it.scopedLive("an HTML page", () =>
    Effect.gen(function*() {
      const peer = yield* cardServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/html" })
        res.end("<!doctype html><html><body>Welcome</body></html>")
      })
      expect(yield* resolve(peer.url)).toMatchObject({ reason: "InvalidJson" })
    }))

  it.scopedLive("a card over maxResponseBytes is refused, whatever content type it claims", () =>
    Effect.gen(function*() {
      for (const type of ["application/json", "text/event-stream"]) {
        const peer = yield* cardServer((_req, res, base) => {
          res.writeHead(200, { "content-type": type })
          res.end(JSON.stringify({ ...cardFor(`${base}/rpc`), description: "x".repeat(256 * 1024) }))
        })
        // Only the fields are compared: a failure's diff of a whole agent and its 256 KiB card takes vitest minutes.
        const refused = yield* Effect.either(
          RemoteAgent.make({ name: "booking", url: peer.url, maxResponseBytes: 64 * 1024 })
        )
        expect(refused._tag === "Left" && refused.left.reason).toBe("InvalidCard")
        // The same card within the limit resolves: the size is what was refused.
        const resolved = yield* Effect.either(
          RemoteAgent.make({ name: "booking", url: peer.url, maxResponseBytes: 1024 * 1024 })
        )
        expect(resolved._tag).toBe("Right")
      }
    }))

  it.scopedLive("a wrong-typed card", () =>
    Effect.gen(function*() {
      const peer = yield* cardServer((_req, res) => json(res, 200, { name: 42, supportedInterfaces: "JSONRPC" }))
      const error = yield* resolve(peer.url)
      expect(error.reason).toBe("InvalidCard")
      expect(error.message).toContain("not a valid A2A agent card")
    }))

  it.scopedLive("a card listing no compatible transport", () =>
    Effect.gen(function*() {
      // gRPC is one the client speaks now: a binding no A2A client knows.
      const peer = yield* cardServer((_req, res, base) => json(res, 200, cardFor(`${base}/mq`, "AMQP")))
      const error = yield* resolve(peer.url)
      expect(error).toMatchObject({ reason: "NoCompatibleTransport" })
      expect(error.message).toContain("the card offers AMQP")
    }))

  it.scopedLive("a server that never answers: bounded by the card timeout", () =>
    Effect.gen(function*() {
      const peer = yield* cardServer(() => undefined)
      expect(yield* resolve(peer.url, { cardTimeout: "200 millis" })).toMatchObject({ reason: "Unreachable" })
    }))

  it.scopedLive("a card whose body stalls: bounded by the card timeout, even across garbage collections", () =>
    Effect.gen(function*() {
      const peer = yield* cardServer((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.write("{\"name\":")
      })
      // A collection while the body is awaited once dropped the timeout on Node 20, and start-up hung.
      setFlagsFromString("--expose-gc")
      const gc = runInNewContext("gc") as () => void
      const fiber = yield* Effect.fork(resolve(peer.url, { cardTimeout: "300 millis" }))
      for (let i = 0; i < 5; i++) {
        yield* Effect.sleep("20 millis")
        gc()
      }
      const error = yield* Fiber.join(fiber).pipe(
        Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "hung" as const })
      )
      expect(error).toMatchObject({ reason: "Unreachable" })
      expect(error.message).toContain("TimeoutError")
    }))

  it.scopedLive("the layer fails start-up by default", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const error = yield* Layer.build(RemoteAgent.layer({ name: "booking", url })).pipe(Effect.flip)
      expect(error._tag).toBe("AgentCardResolutionError")
    }))

  it.scopedLive("degrade: an unavailable agent, logged once, every call explained", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const logs: Array<string> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message))))
      const agent = yield* RemoteAgent.make({ name: "booking", url, onCardFailure: "degrade" }).pipe(
        Effect.provide(capture)
      )
      expect(Option.isNone(agent.card)).toBe(true)
      expect(logs.filter((l) => l.includes("starting degraded"))).toHaveLength(1)
      const error = yield* Effect.flip(agent.send("book"))
      expect(error).toMatchObject({
        reason: "Unavailable",
        delivery: "NotSent",
        agent: "booking",
        operation: "SendMessage"
      })
      expect(error.detail).toContain("Unreachable")
      expect((yield* Effect.flip(agent.getTask("t"))).reason).toBe("Unavailable")
    }))

  it.scopedLive("degrade recovers: once the remote comes up, the agent becomes the real client, logged once", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const { layer: capture, lines } = captureLogs()
      const agent = yield* RemoteAgent.make({
        name: "late",
        url,
        onCardFailure: "degrade",
        cardTimeout: "2 seconds",
        recover: Schedule.spaced("50 millis")
      }).pipe(Effect.provide(capture))
      // While the remote is down, calls fail at once as before, and the attempts they start fail too.
      for (let i = 0; i < 3; i++) {
        expect((yield* Effect.flip(agent.send("book"))).reason).toBe("Unavailable")
        yield* Effect.sleep("80 millis")
      }
      expect(Option.isNone(agent.card)).toBe(true)
      const echo: AgentExecutor.Agent = (request) =>
        Effect.succeed(AgentExecutor.completedText(`echo ${request.message.parts.length}`))
      yield* A2AServer.make({
        agent: echo,
        card: { name: "late", description: "started after its client" },
        port: Number(new URL(url).port)
      })
      let outcome: Option.Option<RemoteOutcome.RemoteOutcome> = Option.none()
      for (let i = 0; i < 100 && Option.isNone(outcome); i++) {
        outcome = Option.getRight(yield* Effect.either(agent.send("book")))
        if (Option.isNone(outcome)) yield* Effect.sleep("50 millis")
      }
      expect(Option.map(outcome, (o) => o._tag)).toEqual(Option.some("Completed"))
      expect(Option.map(agent.card, (card) => card.name)).toEqual(Option.some("late"))
      yield* agent.send("again").pipe(Effect.provide(capture))
      expect(lines.filter((line) => line.message.includes("is available again"))).toHaveLength(1)
    }))

  it.scopedLive("degrade with recover: false stays unavailable", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const agent = yield* RemoteAgent.make({ name: "never", url, onCardFailure: "degrade", recover: false })
      const echo: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.completedText("up"))
      yield* A2AServer.make({ agent: echo, card: { name: "never", description: "" }, port: Number(new URL(url).port) })
      for (let i = 0; i < 3; i++) {
        expect((yield* Effect.flip(agent.send("book"))).reason).toBe("Unavailable")
        yield* Effect.sleep("100 millis")
      }
    }))
})

describe("AgentCardResolutionError", () => {
  it.prop(
    "survives a Schema encode/decode round trip",
    [AgentCardResolutionError.AgentCardResolutionError],
    ([error]) => {
      const wire = JSON.parse(
        JSON.stringify(Schema.encodeSync(AgentCardResolutionError.AgentCardResolutionError)(error))
      )
      const decoded = Schema.decodeUnknownSync(AgentCardResolutionError.AgentCardResolutionError)(wire)
      expect(Schema.encodeSync(AgentCardResolutionError.AgentCardResolutionError)(decoded)).toEqual(wire)
      expect(decoded.message).toBe(error.message)
    }
  )

  it.prop(
    "matchReason runs the handler of the error's own reason",
    [AgentCardResolutionError.AgentCardResolutionError],
    ([error]) => {
      const byReason = AgentCardResolutionError.matchReason(handlers(AgentCardResolutionError.Reason.literals))
      expect(byReason(error)).toEqual([error.reason, error])
    }
  )

  it.scopedLive("matchReason on a real failure: an agent that is not running is worth waiting for, a bad card is not", () =>
    Effect.gen(function*() {
      const mayWait = AgentCardResolutionError.matchReason({
        Unreachable: () => true,
        HttpStatus: (e) => e.status !== undefined && e.status >= 500,
        InvalidJson: () => false,
        InvalidCard: () => false,
        NoCompatibleTransport: () => false,
        InvalidRequest: () => false,
        InvalidSignature: () => false,
        UntrustedSigner: () => false,
        Unsigned: () => false
      })
      const down = yield* resolve(yield* closedPort)
      const garbled = yield* resolve(
        (yield* cardServer((_req, res) => json(res, 200, { name: 42, supportedInterfaces: "JSONRPC" }))).url
      )
      expect([down.reason, garbled.reason]).toEqual(["Unreachable", "InvalidCard"])
      expect([mayWait(down), mayWait(garbled)]).toEqual([true, false])
    }))
})
