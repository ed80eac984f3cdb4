import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  Chunk,
  Duration,
  Effect,
  Exit,
  FastCheck,
  Logger,
  LogLevel,
  Option,
  Scope,
  Stream,
  TestClock,
  TestServices
} from "effect"
import * as A2AClientError from "../src/A2AClientError.js"
import * as Agent from "../src/Agent.js"
import { AgentCardResolutionError } from "../src/AgentCardResolutionError.js"
import * as CircuitBreaker from "../src/CircuitBreaker.js"
import * as GuardedRemoteAgent from "../src/GuardedRemoteAgent.js"
import * as Part from "../src/Part.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import * as RemoteOutcome from "../src/RemoteOutcome.js"
import { apiKey, serveAuthenticated } from "./fixtures/authenticatedServer.js"
import { authText, confirmation, question, rejectReason, serveBooking, ticketText } from "./fixtures/bookingAgent.js"
import { closedPort, json, rawPeer } from "./fixtures/peers.js"

let agents = 0
// Metrics are process-wide, so every remote agent gets its own name.
const freshName = () => `booking-${++agents}`

const errorIdPattern = /\(error_id: ([0-9a-f]{12})\)/

/** The booking agent served by our executor, and a client of it. */
const booking = (options: { readonly hints?: boolean } = {}) =>
  Effect.gen(function*() {
    const server = yield* serveBooking(options)
    const remote = yield* RemoteAgent.make({ name: freshName(), url: server.url, timeout: "5 seconds" })
    return { server, remote }
  })

/**
 * A client whose server has already stopped: its card was resolved while
 * the server ran, then the server's scope was closed.
 */
const stoppedBooking = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const server = yield* Scope.extend(serveBooking(), scope)
  const remote = yield* RemoteAgent.make({ name: freshName(), url: server.url, timeout: "5 seconds" })
  yield* Scope.close(scope, Exit.void)
  return remote
})

/** Runs the guarded agent both ways, blocking and streaming, and checks they agree. */
const both = (agent: GuardedRemoteAgent.GuardedRemoteAgent, input: string) =>
  Effect.gen(function*() {
    const sent = yield* agent.send(input)
    const streamed = yield* Agent.result(agent, input)
    return { sent, streamed }
  })

describe("GuardedRemoteAgent against our executor", () => {
  it.scopedLive("completed: the status text and the artifact texts, no marker", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking()
      const guarded = GuardedRemoteAgent.make(remote)
      const { sent, streamed } = yield* both(guarded, "book flight 4821 for Ana")
      for (const result of [sent, streamed]) {
        expect(result.text).toBe(`${confirmation}\n${ticketText}`)
        expect(GuardedRemoteAgent.markerOf(result.text)).toEqual(Option.none())
        expect(Option.map(result.outcome, (o) => o._tag)).toEqual(Option.some("Completed"))
        expect(result.error).toEqual(Option.none())
      }
      expect(guarded.description).toBe("Books flights. Give it the flight number and the passenger.")
    }))

  it.scopedLive("failed (typed error and defect): REMOTE_FAILED with the status text and its error id", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking()
      const guarded = GuardedRemoteAgent.make(remote)
      for (const input of ["fail flight 4821", "crash flight 4821"]) {
        const { sent, streamed } = yield* both(guarded, input)
        for (const result of [sent, streamed]) {
          expect(result.text).toMatch(/^REMOTE_FAILED Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/)
          const outcome = Option.getOrThrow(result.outcome)
          expect(outcome._tag).toBe("Failed")
          const errorId = outcome._tag === "Failed" ? Option.getOrThrow(outcome.errorId) : ""
          expect(errorIdPattern.exec(result.text)?.[1]).toBe(errorId)
        }
        // each run logs its own cause under its own id
        expect(sent.text).not.toBe(streamed.text)
      }
    }))

  it.scopedLive("failed with a failure hint: the hint suffix follows the error id", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking({ hints: true })
      const result = yield* GuardedRemoteAgent.make(remote).send("fail flight 4821")
      expect(result.text).toMatch(
        /^REMOTE_FAILED Agent execution failed\. \(error_id: [0-9a-f]{12}\) \[retryable=true\]$/
      )
    }))

  it.scopedLive("canceled by the admission hook, rejected, input required, auth required", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking()
      const guarded = GuardedRemoteAgent.make(remote)
      const cases = [
        ["cancel flight 4821", GuardedRemoteAgent.CANCELED, "Canceled"],
        ["reject a flight to the moon", `${GuardedRemoteAgent.REJECTED} ${rejectReason}`, "Rejected"],
        ["input flight 4821", `${GuardedRemoteAgent.INPUT_REQUIRED} ${question}`, "InputRequired"],
        ["auth flight 4821", `${GuardedRemoteAgent.AUTH_REQUIRED} ${authText}`, "AuthRequired"]
      ] as const
      for (const [input, text, tag] of cases) {
        const { sent, streamed } = yield* both(guarded, input)
        for (const result of [sent, streamed]) {
          expect(result.text.startsWith(text)).toBe(true)
          expect(Option.map(result.outcome, (o) => o._tag)).toEqual(Option.some(tag))
        }
      }
    }))

  it.scopedLive("server stopped: REMOTE_UNAVAILABLE, the request was not submitted", () =>
    Effect.gen(function*() {
      const remote = yield* stoppedBooking
      const { sent, streamed } = yield* both(GuardedRemoteAgent.make(remote), "book flight 4821")
      for (const result of [sent, streamed]) {
        expect(result.text).toBe(
          `REMOTE_UNAVAILABLE: the request was not submitted (${remote.name}: the connection was refused)`
        )
        const error = Option.getOrThrow(result.error)
        expect(error._tag === "A2AClientError" && [error.reason, error.delivery]).toEqual([
          "ConnectionRefused",
          "NotSent"
        ])
        expect(result.outcome).toEqual(Option.none())
      }
    }))

  it.scopedLive("connection dropped after the request left: the outcome is unknown, nothing claimed", () =>
    Effect.gen(function*() {
      const peer = yield* rawPeer((req) => req.socket.destroy())
      const remote = yield* RemoteAgent.make({ name: freshName(), url: peer.url, timeout: "5 seconds" })
      const result = yield* GuardedRemoteAgent.make(remote).send("book flight 4821")
      expect(result.text).toBe(
        `REMOTE_UNAVAILABLE: the outcome is unknown: no task was confirmed (${remote.name}: the connection was lost)`
      )
      expect(result.text).not.toContain("not submitted")
      expect(result.text).not.toContain("REMOTE_FAILED")
      expect(peer.requests()).toBeGreaterThan(0)
    }))

  it.scopedLive("degraded start-up: the unavailable agent and the stub say the request was not submitted", () =>
    Effect.gen(function*() {
      const url = yield* closedPort
      const name = freshName()
      const remote = yield* RemoteAgent.make({ name, url, onCardFailure: "degrade", cardTimeout: "2 seconds" })
      const guarded = yield* GuardedRemoteAgent.make(remote).send("book flight 4821")
      const expected =
        `REMOTE_UNAVAILABLE: the request was not submitted (${name}: the agent was not available at start-up)`
      expect(guarded.text).toBe(expected)
      const cause = new AgentCardResolutionError({ agent: name, url, reason: "Unreachable", detail: "refused" })
      const stub = yield* Agent.result(Agent.unavailable(cause, "Books flights"), "book flight 4821")
      expect(stub.text).toBe(expected)
      expect(Option.map(stub.error, (e) => e._tag === "A2AClientError" && e.reason)).toEqual(Option.some("Unavailable"))
    }))

  it.scopedLive("circuit open after repeated failures: REMOTE_CIRCUIT_OPEN with the retry delay, remote not called", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking()
      const breaker = yield* CircuitBreaker.make(remote.name, {
        trip: CircuitBreaker.consecutiveFailures(2),
        openDuration: "20 seconds",
        isFailure: CircuitBreaker.remoteFailure({ failedOutcome: true })
      })
      let calls = 0
      const guarded = GuardedRemoteAgent.make(remote, {
        breaker,
        retry: (call) => Effect.zipRight(Effect.sync(() => calls++), call)
      })
      expect((yield* guarded.send("fail flight 4821")).text).toMatch(/^REMOTE_FAILED /)
      expect((yield* guarded.send("fail flight 4821")).text).toMatch(/^REMOTE_FAILED /)
      const sent = yield* guarded.send("book flight 4821")
      const streamed = yield* Agent.result(guarded, "book flight 4821")
      for (const result of [sent, streamed]) {
        expect(result.text).toBe(
          `REMOTE_CIRCUIT_OPEN retry after 20s: the request was not submitted (${remote.name} failed repeatedly)`
        )
        expect(Option.map(result.error, (e) => e._tag)).toEqual(Option.some("CircuitOpen"))
      }
      expect(calls).toBe(2)
    }))

  it.scopedLive("the retry policy is told per call what is safe: a keyed send is resent, a run or a send without a key is not", () =>
    Effect.gen(function*() {
      // Every request may have been received (500): only a call with an idempotency key may be resent.
      const peer = yield* rawPeer((_req, res) => json(res, 500, { error: "broken" }))
      const remote = yield* RemoteAgent.make({ name: freshName(), url: peer.url })
      const guarded = GuardedRemoteAgent.make(remote, { retry: { maxAttempts: 3, base: "1 millis", cap: "2 millis" } })
      const sent = (before: number) => peer.requests() - before
      let before = peer.requests()
      expect((yield* guarded.send("book", { idempotencyKey: "k-1" })).text).toMatch(/^REMOTE_UNAVAILABLE/)
      expect(sent(before)).toBe(3)
      before = peer.requests()
      expect((yield* guarded.send("book")).text).toMatch(/^REMOTE_UNAVAILABLE/)
      expect(sent(before)).toBe(1)
      // An empty key is no key: the server does not deduplicate on it.
      before = peer.requests()
      expect((yield* guarded.send("book", { idempotencyKey: "" })).text).toMatch(/^REMOTE_UNAVAILABLE/)
      expect(sent(before)).toBe(1)
      before = peer.requests()
      expect((yield* Agent.result(guarded, "book")).text).toMatch(/^REMOTE_UNAVAILABLE/)
      expect(sent(before)).toBe(1)
    }))

  it.scoped(
    "circuit timing with TestClock: the retry delay counts down, then a probe reaches the remote",
    () =>
      Effect.gen(function*() {
        // the server runs on the live clock; only the breaker sees the TestClock
        const remote = yield* TestServices.provideLive(stoppedBooking)
        const breaker = yield* CircuitBreaker.make(remote.name, {
          trip: CircuitBreaker.consecutiveFailures(1),
          openDuration: "10 seconds"
        })
        const guarded = GuardedRemoteAgent.make(remote, { breaker })
        expect((yield* guarded.send("book")).text).toMatch(/^REMOTE_UNAVAILABLE: the request was not submitted/)
        expect((yield* guarded.send("book")).text).toMatch(/^REMOTE_CIRCUIT_OPEN retry after 10s:/)
        yield* TestClock.adjust("4 seconds")
        expect((yield* guarded.send("book")).text).toMatch(/^REMOTE_CIRCUIT_OPEN retry after 6s:/)
        yield* TestClock.adjust("6 seconds")
        // the probe reaches the stopped remote and fails again
        expect((yield* guarded.send("book")).text).toMatch(/^REMOTE_UNAVAILABLE: the request was not submitted/)
        expect(yield* breaker.state).toBe("Open")
      }),
    { timeout: 30_000 }
  )

  it.scopedLive("progress of a streaming run comes before the result", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking()
      const events = Chunk.toArray(yield* Stream.runCollect(GuardedRemoteAgent.make(remote).run("slow flight 4821")))
      expect(events.map((e) => e._tag).at(-1)).toBe("Result")
      expect(events.filter((e) => e._tag === "Progress").map((e) => e.text)).toContain("checking seats")
      expect(events.at(-1)?.text).toBe(confirmation)
    }))
})

describe("GuardedRemoteAgent against a server that authenticates its callers", () => {
  const transports = ["JSONRPC", "HTTP+JSON", "GRPC"] as const

  it.scopedLive("without credentials: REMOTE_REFUSED for authentication on every transport, never REMOTE_UNAVAILABLE; with them, the answer", () =>
    Effect.gen(function*() {
      // The server logs each refusal as a warning: not this test's concern.
      const { server } = yield* Logger.withMinimumLogLevel(serveAuthenticated, LogLevel.Error)
      for (const transport of transports) {
        const name = freshName()
        const remote = yield* RemoteAgent.make({ name, url: server.url, timeout: "5 seconds", transports: [transport] })
        // Retries and a breaker that one counted failure opens: a refusal for credentials is neither resent nor counted.
        const breaker = yield* CircuitBreaker.make(name, { trip: CircuitBreaker.consecutiveFailures(1) })
        const guarded = GuardedRemoteAgent.make(remote, { breaker, retry: { maxAttempts: 3, base: "1 millis" } })
        const refusal = transport === "GRPC" ? "gRPC UNAUTHENTICATED" : "HTTP 401"
        for (
          const run of [guarded.send("complete x"), Agent.result(guarded, "complete x"), guarded.send("complete x")]
        ) {
          const result = yield* run
          expect(result.text, transport).toBe(
            `REMOTE_REFUSED ${refusal}: the request was refused for authentication (no valid credentials were given); nothing ran (${name}: the server answered ${refusal})`
          )
          expect(Option.getOrNull(GuardedRemoteAgent.markerOf(result.text))).toBe("REMOTE_REFUSED")
          expect(Option.map(result.error, (e) => e._tag)).toEqual(Option.some("A2AClientError"))
        }
        expect(yield* breaker.state, transport).toBe("Closed")
        const keyed = yield* RemoteAgent.make({
          name: freshName(),
          url: server.url,
          timeout: "5 seconds",
          transports: [transport],
          headers: { "x-api-key": apiKey }
        })
        const completed = yield* GuardedRemoteAgent.make(keyed).send("complete booked")
        // The playground answers in its status and in an artifact.
        expect(completed.text, transport).toBe("booked\nbooked")
        expect(Option.map(completed.outcome, (o) => o._tag)).toEqual(Option.some("Completed"))
      }
    }))
})

describe("Agent.fromRemote: the unguarded remote agent", () => {
  it.scopedLive("keeps the outcome as a value and the failed call as a typed error", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking()
      const agent = Agent.fromRemote(remote)
      const failed = yield* Agent.result(agent, "fail flight 4821")
      expect(failed.text).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/)
      expect(Option.map(failed.outcome, (o) => o._tag)).toEqual(Option.some("Failed"))
      const completed = yield* Agent.result(agent, "book flight 4821")
      expect(completed.text).toBe(`${confirmation}\n${ticketText}`)

      const stopped = Agent.fromRemote(yield* stoppedBooking)
      const error = yield* Effect.flip(Agent.result(stopped, "book flight 4821"))
      expect([error._tag, error.reason, error.delivery]).toEqual(["A2AClientError", "ConnectionRefused", "NotSent"])
    }))
})

describe("only remote failures become text", () => {
  it.scopedLive("a bug in the completed-text callback is a defect, not text", () =>
    Effect.gen(function*() {
      const { remote } = yield* booking()
      const guarded = GuardedRemoteAgent.make(remote, {
        completedText: () => {
          throw new Error("formatting bug")
        }
      })
      for (const run of [guarded.send("book flight 4821"), Agent.result(guarded, "book flight 4821")]) {
        const exit = yield* Effect.exit(run)
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
        if (Exit.isFailure(exit)) expect(String(Cause.squash(exit.cause))).toContain("formatting bug")
      }
    }))

  it.scopedLive("a defect in the retry policy stays a defect even when the remote is down", () =>
    Effect.gen(function*() {
      const remote = yield* stoppedBooking
      const guarded = GuardedRemoteAgent.make(remote, {
        retry: (call) => Effect.flatMap(Effect.either(call), () => Effect.dieMessage("retry policy bug"))
      })
      const exit = yield* Effect.exit(guarded.send("book flight 4821"))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      // A policy function that throws while building its Effect: the same defect, from send as from run.
      const throwing = GuardedRemoteAgent.make(remote, {
        retry: () => {
          throw new Error("retry builder bug")
        }
      })
      for (const call of [() => throwing.send("book flight 4821"), () => Agent.result(throwing, "book flight 4821")]) {
        const thrown = yield* Effect.exit(Effect.suspend(call))
        expect(Exit.isFailure(thrown) && Cause.isDie(thrown.cause)).toBe(true)
      }
      expect(Effect.isEffect(throwing.send("book flight 4821"))).toBe(true)
    }))

  it.scopedLive("a defect in a local agent stays a defect", () =>
    Effect.gen(function*() {
      const local = Agent.make({ name: "local", description: "buggy", run: () => Effect.dieMessage("local bug") })
      const exit = yield* Effect.exit(Agent.result(local, "anything"))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    }))
})

describe("the text of a completed task", () => {
  it("holds the data parts as compact JSON after the text, the artifacts' too, each cut at 2,000 characters; null data is left out", () => {
    const long = { items: "x".repeat(3000) }
    const longJson = JSON.stringify(long)
    const outcome = RemoteOutcome.Completed.make({
      agent: "booking",
      taskId: "t-1",
      contextId: "c-1",
      text: confirmation,
      parts: [Part.DataPart.make({ data: { seat: "14C", legs: [1, 2] } }), Part.TextPart.make({ text: confirmation })],
      artifacts: [
        Part.Artifact.make({
          artifactId: "ticket",
          name: "ticket",
          description: "",
          parts: [
            Part.DataPart.make({ data: { pnr: "KX7Q2" } }),
            Part.TextPart.make({ text: ticketText }),
            Part.DataPart.make({ data: null })
          ]
        }),
        Part.Artifact.make({
          artifactId: "manifest",
          name: "manifest",
          description: "",
          parts: [Part.DataPart.make({ data: long })]
        })
      ]
    })
    expect(GuardedRemoteAgent.outcomeText(outcome).split("\n")).toEqual([
      confirmation,
      "{\"seat\":\"14C\",\"legs\":[1,2]}",
      ticketText,
      "{\"pnr\":\"KX7Q2\"}",
      `${longJson.slice(0, 2000)}… [cut: ${longJson.length} characters in all]`
    ])
  })
})

describe("the wording follows delivery", () => {
  const reasons = A2AClientError.Reason.literals
  const textOf = (
    fields: Pick<A2AClientError.A2AClientError, "reason" | "delivery"> & Partial<A2AClientError.A2AClientError>
  ) =>
    GuardedRemoteAgent.errorText(
      new A2AClientError.A2AClientError({
        agent: "booking",
        operation: "SendMessage",
        detail: "secret internal detail",
        ...fields
      })
    )
  it.prop(
    "NotSent says not submitted; Unknown says unknown and never claims a failure",
    [
      FastCheck.constantFrom(...reasons),
      FastCheck.constantFrom<A2AClientError.Delivery>("NotSent", "Unknown"),
      FastCheck.boolean()
    ],
    ([reason, delivery, withTask]) => {
      const text = textOf({ reason, delivery, ...(withTask ? { taskId: "task-1" } : {}) })
      expect(text.startsWith("REMOTE_UNAVAILABLE: ")).toBe(true)
      expect(text.includes("the request was not submitted")).toBe(delivery === "NotSent")
      if (delivery === "Unknown") {
        expect(text).toContain("the outcome is unknown")
        expect(text.includes("no task was confirmed")).toBe(!withTask)
        expect(text).not.toMatch(/failed/i)
      }
      expect(text).not.toContain("secret internal detail")
    }
  )

  it.prop(
    "Refused says refused and that nothing ran, names the refusal, and claims neither a failure nor an unknown outcome",
    [
      FastCheck.constantFrom(...reasons),
      FastCheck.constantFrom(undefined, -32001, -32004, -32602),
      FastCheck.constantFrom(undefined, 400, 429, 503)
    ],
    ([reason, code, status]) => {
      const text = textOf({
        reason,
        delivery: "Refused",
        ...(code === undefined ? {} : { code, protocolError: A2AClientError.protocolErrorName(code) }),
        ...(status === undefined ? {} : { status })
      })
      const name = code !== undefined ? A2AClientError.protocolErrorName(code) : `HTTP ${status ?? "error"}`
      expect(text.startsWith(`${GuardedRemoteAgent.REFUSED} ${name}: the request was refused; nothing ran (booking: `))
        .toBe(true)
      expect(Option.getOrNull(GuardedRemoteAgent.markerOf(text))).toBe("REMOTE_REFUSED")
      expect(text).not.toContain("not submitted")
      expect(text).not.toContain("unknown")
      expect(text).not.toContain("REMOTE_UNAVAILABLE")
      expect(text).not.toContain("secret internal detail")
    }
  )

  it("a refusal for credentials says so on every carrier: 401 and UNAUTHENTICATED, 403 and PERMISSION_DENIED; other refusals do not", () => {
    const missing = "the request was refused for authentication (no valid credentials were given); nothing ran"
    const denied = "the request was refused for authentication (the credentials given do not allow it); nothing ran"
    const cases: ReadonlyArray<readonly [Partial<A2AClientError.A2AClientError>, string]> = [
      [{ status: 401 }, `REMOTE_REFUSED HTTP 401: ${missing} (booking: the server answered HTTP 401)`],
      [
        { grpcStatus: "UNAUTHENTICATED" },
        `REMOTE_REFUSED gRPC UNAUTHENTICATED: ${missing} (booking: the server answered gRPC UNAUTHENTICATED)`
      ],
      [{ status: 403 }, `REMOTE_REFUSED HTTP 403: ${denied} (booking: the server answered HTTP 403)`],
      [
        { grpcStatus: "PERMISSION_DENIED" },
        `REMOTE_REFUSED gRPC PERMISSION_DENIED: ${denied} (booking: the server answered gRPC PERMISSION_DENIED)`
      ],
      [
        { status: 404 },
        "REMOTE_REFUSED HTTP 404: the request was refused; nothing ran (booking: the server answered HTTP 404)"
      ],
      [
        { grpcStatus: "NOT_FOUND" },
        "REMOTE_REFUSED gRPC NOT_FOUND: the request was refused; nothing ran (booking: the server answered gRPC NOT_FOUND)"
      ]
    ]
    for (const [fields, text] of cases) {
      expect(textOf({ reason: "HttpStatus", delivery: "Refused", ...fields })).toBe(text)
    }
    // An A2A error names itself, whatever status carried it.
    expect(
      textOf({ reason: "ProtocolError", delivery: "Refused", status: 401, code: -32001, protocolError: "TaskNotFound" })
    )
      .toBe(
        "REMOTE_REFUSED TaskNotFound: the request was refused; nothing ran (booking: the agent answered with a protocol error -32001 TaskNotFound)"
      )
  })

  it("a half-open rejection says the request was not submitted", () => {
    const text = GuardedRemoteAgent.errorText(
      new CircuitBreaker.CircuitOpen({ agent: "booking", retryAfter: Duration.zero, state: "HalfOpen" })
    )
    expect(text).toMatch(/^REMOTE_CIRCUIT_OPEN retry shortly: the request was not submitted/)
  })
})
