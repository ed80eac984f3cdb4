import { describe, expect, it } from "@effect/vitest"
import {
  Chunk,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  FastCheck,
  Fiber,
  Metric,
  Option,
  Queue,
  Ref,
  Schedule,
  Schema,
  Stream,
  TestClock
} from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { A2AClientError, type Reason } from "../src/A2AClientError.js"
import * as CircuitBreaker from "../src/CircuitBreaker.js"
import { Completed, Failed } from "../src/RemoteOutcome.js"

let agents = 0
// Metrics are process-wide, so every breaker gets its own agent name.
const freshAgent = (prefix = "agent") => `${prefix}-${++agents}`

const clientError = (reason: Reason, status?: number) =>
  new A2AClientError({
    agent: "booking",
    operation: "SendMessage",
    reason,
    delivery: reason === "ConnectionRefused" ? "NotSent" : "Unknown",
    detail: "test",
    ...(status === undefined ? {} : { status })
  })

class Nope extends Schema.TaggedError<Nope>()("Nope", {}) {}

type Result = "ok" | "fail" | "ignored" | "defect"

/** A remote that counts its invocations and ends as told. */
const remote = (calls: Ref.Ref<number>, result: Result): Effect.Effect<string, A2AClientError | Nope> => {
  const end: Effect.Effect<string, A2AClientError | Nope> = result === "ok"
    ? Effect.succeed("ok")
    : result === "fail"
    ? Effect.fail(clientError("ConnectionRefused"))
    : result === "ignored"
    ? Effect.fail(new Nope())
    : Effect.dieMessage("bug in the caller")
  return Effect.zipRight(Ref.update(calls, (n) => n + 1), end)
}

const rejection = <A, E, R>(effect: Effect.Effect<A, E | CircuitBreaker.CircuitOpen, R>) =>
  Effect.flatMap(
    Effect.flip(effect),
    (error) =>
      error instanceof CircuitBreaker.CircuitOpen ? Effect.succeed(error) : Effect.dieMessage(`not rejected: ${error}`)
  )

const metricsOf = (agent: string) =>
  Effect.all({
    gauge: Metric.value(Metric.tagged(CircuitBreaker.stateGauge, "agent", agent)),
    rejected: Metric.value(Metric.tagged(CircuitBreaker.rejectedCounter, "agent", agent))
  }).pipe(Effect.map(({ gauge, rejected }) => ({ gauge: gauge.value, rejected: rejected.count })))

/**
 * Starts a protected call whose remote is held until the test completes
 * `gate` with how it should end. Fails the test at once, instead of waiting,
 * when the breaker rejects the call.
 */
const hold = (breaker: CircuitBreaker.CircuitBreaker, calls: Ref.Ref<number>) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<Result>()
    const entered = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      breaker.protect(
        Effect.zipRight(
          Deferred.succeed(entered, undefined),
          Effect.flatMap(Deferred.await(gate), (result) => remote(calls, result))
        )
      )
    )
    const rejected = Effect.flatMap(Fiber.await(fiber), (exit) => Effect.dieMessage(`not admitted: ${exit}`))
    yield* Effect.raceFirst(Deferred.await(entered), rejected)
    return { fiber, gate }
  })

describe("CircuitBreaker", () => {
  it.effect("a wall clock stepped back restarts the open duration instead of stretching it", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(10_000_000)
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: "30 seconds"
      })
      const calls = yield* Ref.make(0)
      yield* Effect.flip(breaker.protect(remote(calls, "fail")))
      // An NTP correction moves the clock an hour back.
      yield* TestClock.setTime(10_000_000 - 3_600_000)
      expect(Duration.toMillis((yield* rejection(breaker.protect(remote(calls, "ok")))).retryAfter)).toBe(30_000)
      yield* TestClock.adjust("31 seconds")
      yield* breaker.protect(remote(calls, "ok"))
      expect(yield* breaker.state).toBe("Closed")
    }))

  it.effect("trips after consecutive failures and rejects without calling the remote until the open duration passed", () =>
    Effect.gen(function*() {
      const agent = freshAgent()
      const breaker = yield* CircuitBreaker.make(agent, {
        trip: CircuitBreaker.consecutiveFailures(3),
        openDuration: "10 seconds"
      })
      const calls = yield* Ref.make(0)
      for (let i = 0; i < 3; i++) {
        const error = yield* Effect.flip(breaker.protect(remote(calls, "fail")))
        expect(error._tag).toBe("A2AClientError")
      }
      expect(yield* breaker.state).toBe("Open")

      const open = yield* rejection(breaker.protect(remote(calls, "ok")))
      expect(open).toMatchObject({ _tag: "CircuitOpen", agent, state: "Open" })
      expect(Duration.toMillis(open.retryAfter)).toBe(10_000)
      expect(open.message).toBe(`${agent}: circuit open, retry after 10s`)
      expect(yield* Ref.get(calls)).toBe(3)

      yield* TestClock.adjust("4 seconds")
      const later = yield* rejection(breaker.protect(remote(calls, "ok")))
      expect(Duration.toMillis(later.retryAfter)).toBe(6_000)
      expect(yield* Ref.get(calls)).toBe(3)

      yield* TestClock.adjust("6 seconds")
      expect(yield* breaker.protect(remote(calls, "ok"))).toBe("ok")
      expect(yield* Ref.get(calls)).toBe(4)
      expect(yield* breaker.state).toBe("Closed")
      expect(yield* metricsOf(agent)).toEqual({ gauge: 0, rejected: 2 })
    }))

  it.effect("a success resets the count of consecutive failures", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), { trip: CircuitBreaker.consecutiveFailures(3) })
      const calls = yield* Ref.make(0)
      for (const result of ["fail", "fail", "ok", "fail", "fail"] as const) {
        yield* Effect.either(breaker.protect(remote(calls, result)))
      }
      expect(yield* breaker.state).toBe("Closed")
      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      expect(yield* breaker.state).toBe("Open")
    }))

  it.effect("failure rate trips only once the minimum number of calls is reached, over a sliding window", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.failureRate({ threshold: 0.5, window: 4, minimumCalls: 4 })
      })
      const calls = yield* Ref.make(0)
      const run = (results: ReadonlyArray<Result>) =>
        Effect.forEach(results, (result) => Effect.either(breaker.protect(remote(calls, result))), { discard: true })

      // 2 failures out of 3 calls: above the rate, below the minimum
      yield* run(["fail", "ok", "fail"])
      expect(yield* breaker.state).toBe("Closed")
      // the window slides: [ok, fail, ok, ok], then [fail, ok, ok, fail]
      yield* run(["ok", "ok"])
      expect(yield* breaker.state).toBe("Closed")
      yield* run(["fail"])
      expect(yield* breaker.state).toBe("Open")
    }))

  it.effect("open duration from a Schedule backs off across repeated trips and starts over after closing", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: Schedule.exponential("1 second")
      })
      const calls = yield* Ref.make(0)
      const retryAfter = Effect.map(
        rejection(breaker.protect(remote(calls, "ok"))),
        (error) => Duration.toMillis(error.retryAfter)
      )

      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      expect(yield* retryAfter).toBe(1_000)
      yield* TestClock.adjust("1 second")
      yield* Effect.either(breaker.protect(remote(calls, "fail"))) // failing probe
      expect(yield* retryAfter).toBe(2_000)
      yield* TestClock.adjust("2 seconds")
      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      expect(yield* retryAfter).toBe(4_000)
      yield* TestClock.adjust("4 seconds")
      expect(yield* breaker.protect(remote(calls, "ok"))).toBe("ok")
      expect(yield* breaker.state).toBe("Closed")

      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      expect(yield* retryAfter).toBe(1_000)
      expect(yield* Ref.get(calls)).toBe(5)
    }))

  it.effect("when the open-duration schedule ends, its last delay is kept", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: Schedule.exponential("1 second").pipe(Schedule.intersect(Schedule.recurs(2)))
      })
      const calls = yield* Ref.make(0)
      const delays: Array<number> = []
      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      for (let trip = 0; trip < 4; trip++) {
        const open = yield* rejection(breaker.protect(remote(calls, "ok")))
        delays.push(Duration.toMillis(open.retryAfter))
        yield* TestClock.adjust(open.retryAfter)
        yield* Effect.either(breaker.protect(remote(calls, "fail")))
      }
      expect(delays).toEqual([1_000, 2_000, 2_000, 2_000])
    }))

  it.effect("half-open lets the configured number of concurrent probes through and closes only after they succeed", () =>
    Effect.gen(function*() {
      const agent = freshAgent()
      const breaker = yield* CircuitBreaker.make(agent, {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: "1 second",
        halfOpenProbes: 2
      })
      const calls = yield* Ref.make(0)
      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      yield* TestClock.adjust("1 second")

      const first = yield* hold(breaker, calls)
      expect(yield* breaker.state).toBe("HalfOpen")
      const second = yield* hold(breaker, calls)

      for (let i = 0; i < 3; i++) {
        const busy = yield* rejection(breaker.protect(remote(calls, "ok")))
        expect(busy.state).toBe("HalfOpen")
        expect(Duration.toMillis(busy.retryAfter)).toBe(0)
      }
      expect(yield* Ref.get(calls)).toBe(1)

      yield* Deferred.succeed(first.gate, "ok")
      expect(yield* Fiber.join(first.fiber)).toBe("ok")
      expect(yield* breaker.state).toBe("HalfOpen")

      yield* Deferred.succeed(second.gate, "ok")
      expect(yield* Fiber.join(second.fiber)).toBe("ok")
      expect(yield* breaker.state).toBe("Closed")
      expect(yield* Ref.get(calls)).toBe(3)
      expect(yield* metricsOf(agent)).toEqual({ gauge: 0, rejected: 3 })
    }))

  it.effect("a failing probe opens the breaker again; probes of that round still hold their slots but cannot close it", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: "1 second",
        halfOpenProbes: 2
      })
      const calls = yield* Ref.make(0)
      const held = () => hold(breaker, calls)
      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      yield* TestClock.adjust("1 second")

      const a = yield* held()
      const b = yield* held()
      yield* Deferred.succeed(a.gate, "fail")
      expect(Either.isLeft(yield* Effect.either(Fiber.join(a.fiber)))).toBe(true)
      expect(yield* breaker.state).toBe("Open")
      expect((yield* rejection(breaker.protect(remote(calls, "ok")))).state).toBe("Open")

      yield* TestClock.adjust("1 second")
      const c = yield* held()
      // b, from the previous round, still runs: one slot left, taken by c
      expect((yield* rejection(breaker.protect(remote(calls, "ok")))).state).toBe("HalfOpen")
      yield* Deferred.succeed(b.gate, "ok")
      expect(yield* Fiber.join(b.fiber)).toBe("ok")
      expect(yield* breaker.state).toBe("HalfOpen")

      const e = yield* held()
      yield* Deferred.succeed(c.gate, "ok")
      yield* Fiber.join(c.fiber)
      expect(yield* breaker.state).toBe("HalfOpen")
      yield* Deferred.succeed(e.gate, "ok")
      yield* Fiber.join(e.fiber)
      expect(yield* breaker.state).toBe("Closed")
      expect(yield* Ref.get(calls)).toBe(5)
    }))

  it.effect("interruption by the caller is not a failure and releases the probe slot", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: "1 second"
      })
      const calls = yield* Ref.make(0)

      const closedCall = yield* hold(breaker, calls)
      yield* Fiber.interrupt(closedCall.fiber)
      expect(yield* breaker.state).toBe("Closed")

      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      yield* TestClock.adjust("1 second")
      const probe = yield* hold(breaker, calls)
      expect((yield* rejection(breaker.protect(remote(calls, "ok")))).state).toBe("HalfOpen")
      const exit = yield* Fiber.interrupt(probe.fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(yield* breaker.state).toBe("HalfOpen")

      // the slot is free again: the next call is the probe
      expect(yield* breaker.protect(remote(calls, "ok"))).toBe("ok")
      expect(yield* breaker.state).toBe("Closed")
    }))

  it.effect("defects and errors that are not remote failures pass through without counting, and release the probe slot", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: "1 second"
      })
      const calls = yield* Ref.make(0)
      const passThrough: Array<Effect.Effect<never, A2AClientError | Nope>> = [
        Effect.fail(clientError("ProtocolError")),
        Effect.fail(clientError("HttpStatus", 404)),
        Effect.fail(clientError("HttpStatus", 429)),
        Effect.fail(clientError("Aborted")),
        Effect.fail(clientError("InvalidResponse")),
        Effect.fail(new Nope())
      ]
      for (const effect of passThrough) {
        const error = yield* Effect.flip(breaker.protect(effect))
        expect(error._tag).not.toBe("CircuitOpen")
      }
      const defect = yield* Effect.exit(breaker.protect(remote(calls, "defect")))
      expect(Exit.isFailure(defect) && defect.cause._tag === "Die").toBe(true)
      expect(yield* breaker.state).toBe("Closed")

      yield* Effect.either(breaker.protect(Effect.fail(clientError("HttpStatus", 503))))
      expect(yield* breaker.state).toBe("Open")
      yield* TestClock.adjust("1 second")
      yield* Effect.exit(breaker.protect(remote(calls, "defect")))
      expect(yield* breaker.state).toBe("HalfOpen")
      yield* Effect.either(breaker.protect(remote(calls, "ignored")))
      expect(yield* breaker.state).toBe("HalfOpen")
      expect(yield* breaker.protect(remote(calls, "ok"))).toBe("ok")
      expect(yield* breaker.state).toBe("Closed")
    }))

  it.effect("a failure predicate that throws fails that call with the defect and gives its probe slot back", () =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: "1 second",
        // Reads a field that an unexpected success does not have.
        isFailure: (exit) =>
          Exit.isFailure(exit) || (exit.value as { readonly status: { readonly ok: boolean } }).status.ok === false
      })
      yield* Effect.exit(breaker.protect(Effect.fail(clientError("ConnectionRefused"))))
      yield* TestClock.adjust("1 second")
      const probe = yield* Effect.exit(breaker.protect(Effect.succeed(undefined)))
      expect(Exit.isFailure(probe) && probe.cause._tag === "Die" && probe.cause.defect instanceof TypeError).toBe(true)
      expect(yield* breaker.state).toBe("HalfOpen")
      expect(yield* breaker.protect(Effect.succeed({ status: { ok: true } }))).toEqual({ status: { ok: true } })
      expect(yield* breaker.state).toBe("Closed")
    }))

  /** The state of a breaker that trips on one failure, after one call that fails with `error`. */
  const stateAfter = (error: A2AClientError) =>
    Effect.gen(function*() {
      const breaker = yield* CircuitBreaker.make(freshAgent(), { trip: CircuitBreaker.consecutiveFailures(1) })
      yield* Effect.either(breaker.protect(Effect.fail(error)))
      return yield* breaker.state
    })

  it.effect("every default failure reason trips", () =>
    Effect.forEach(
      [
        clientError("ConnectionRefused"),
        clientError("ConnectionLost"),
        clientError("Timeout"),
        clientError("StreamInterrupted"),
        clientError("HttpStatus", 500),
        clientError("HttpStatus", 503),
        // A 5xx with a JSON-RPC error the server may have acted on (-32603), as an SDK server's 500 carries.
        clientError("ProtocolError", 503),
        clientError("ProtocolError", 500),
        // A server that sheds load refuses, and is as good as down for now.
        new A2AClientError({ ...clientError("HttpStatus", 429), delivery: "Refused" }),
        // The same on gRPC: RESOURCE_EXHAUSTED is its 429, UNKNOWN and INTERNAL its 5xx.
        new A2AClientError({
          ...clientError("HttpStatus"),
          transport: "GRPC",
          grpcStatus: "RESOURCE_EXHAUSTED",
          delivery: "Refused"
        }),
        new A2AClientError({ ...clientError("HttpStatus"), transport: "GRPC", grpcStatus: "UNKNOWN" }),
        new A2AClientError({ ...clientError("ProtocolError"), transport: "GRPC", grpcStatus: "INTERNAL", code: -32603 })
      ],
      (error) => Effect.map(stateAfter(error), (state) => expect(state).toBe("Open"))
    ))

  it.effect("a refusal other than 429 does not trip: the remote answered and is up", () =>
    Effect.forEach(
      [
        new A2AClientError({
          ...clientError("ProtocolError"),
          delivery: "Refused",
          code: -32004,
          protocolError: "UnsupportedOperation"
        }),
        // A server shutting down refuses with 503 before anything runs.
        new A2AClientError({
          ...clientError("ProtocolError", 503),
          delivery: "Refused",
          code: -32004,
          protocolError: "UnsupportedOperation"
        }),
        new A2AClientError({ ...clientError("HttpStatus", 404), delivery: "Refused" }),
        new A2AClientError({
          ...clientError("HttpStatus"),
          transport: "GRPC",
          grpcStatus: "PERMISSION_DENIED",
          delivery: "Refused"
        })
      ],
      (error) => Effect.map(stateAfter(error), (state) => expect(state).toBe("Closed"))
    ))

  it.effect("the predicate can count a Failed outcome on the success channel and remove reasons", () =>
    Effect.gen(function*() {
      const outcome = (tag: "Completed" | "Failed") => {
        const fields = { agent: "booking", taskId: "t1", contextId: "c1", text: "", parts: [], artifacts: [] }
        return tag === "Completed"
          ? new Completed(fields)
          : new Failed({ ...fields, errorId: Option.some("3f9c0a7b12de"), hint: Option.none() })
      }
      const counting = yield* CircuitBreaker.make(freshAgent(), {
        trip: CircuitBreaker.consecutiveFailures(1),
        isFailure: CircuitBreaker.remoteFailure({ failedOutcome: true, exclude: ["Timeout"] })
      })
      yield* counting.protect(Effect.succeed(outcome("Completed")))
      yield* Effect.either(counting.protect(Effect.fail(clientError("Timeout"))))
      expect(yield* counting.state).toBe("Closed")
      const failed = yield* counting.protect(Effect.succeed(outcome("Failed")))
      expect(failed._tag).toBe("Failed")
      expect(yield* counting.state).toBe("Open")

      const byDefault = yield* CircuitBreaker.make(freshAgent(), { trip: CircuitBreaker.consecutiveFailures(1) })
      yield* byDefault.protect(Effect.succeed(outcome("Failed")))
      expect(yield* byDefault.state).toBe("Closed")
    }))

  it.scoped("publishes transitions and keeps the state gauge up to date", () =>
    Effect.gen(function*() {
      const agent = freshAgent()
      const breaker = yield* CircuitBreaker.make(agent, {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: Schedule.spaced("5 seconds")
      })
      const calls = yield* Ref.make(0)
      const queue = yield* breaker.subscribe
      const streamed = yield* Effect.fork(Stream.runCollect(Stream.take(breaker.transitions, 3)))
      // let the stream subscribe before the first change
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()

      yield* Effect.either(breaker.protect(remote(calls, "fail")))
      expect(yield* metricsOf(agent)).toEqual({ gauge: 2, rejected: 0 })
      yield* TestClock.adjust("5 seconds")
      const probe = yield* hold(breaker, calls)
      expect((yield* metricsOf(agent)).gauge).toBe(1)
      yield* Deferred.succeed(probe.gate, "ok")
      yield* Fiber.join(probe.fiber)
      expect((yield* metricsOf(agent)).gauge).toBe(0)

      const transitions = Chunk.toReadonlyArray(yield* Queue.takeAll(queue))
      expect(transitions.map((t) => [t.from, t.to, t.sequence, t.at])).toEqual([
        ["Closed", "Open", 1, 0],
        ["Open", "HalfOpen", 2, 5_000],
        ["HalfOpen", "Closed", 3, 5_000]
      ])
      expect(transitions.map((t) => Option.map(t.openFor, Duration.toMillis))).toEqual([
        Option.some(5_000),
        Option.none(),
        Option.none()
      ])
      expect(transitions.every((t) => t.agent === agent)).toBe(true)
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      const streamedExit = yield* Fiber.poll(streamed)
      expect(Option.map(streamedExit, Exit.map(Chunk.toReadonlyArray))).toEqual(Option.some(Exit.succeed(transitions)))
    }))

  it.effect("the registry gives one breaker per agent name, each with its own state", () =>
    Effect.gen(function*() {
      const booking = freshAgent("booking")
      const payments = freshAgent("payments")
      const first = yield* CircuitBreaker.forAgent(booking)
      expect(yield* CircuitBreaker.forAgent(booking)).toBe(first)
      const other = yield* CircuitBreaker.forAgent(payments)
      expect(other).not.toBe(first)

      const calls = yield* Ref.make(0)
      yield* Effect.either(remote(calls, "fail").pipe(CircuitBreaker.withBreaker(payments)))
      expect(yield* other.state).toBe("Open")
      expect(yield* first.state).toBe("Closed")
      // booking uses the default policy: five failures in a row
      for (let i = 0; i < 4; i++) {
        yield* Effect.either(remote(calls, "fail").pipe(CircuitBreaker.withBreaker(booking)))
      }
      expect(yield* first.state).toBe("Closed")
      // Data-first, the same breaker.
      yield* Effect.either(CircuitBreaker.withBreaker(remote(calls, "fail"), booking))
      expect(yield* first.state).toBe("Open")
      const rejected = yield* rejection(remote(calls, "ok").pipe(CircuitBreaker.withBreaker(booking)))
      expect(rejected.agent).toBe(booking)
      expect((yield* rejection(CircuitBreaker.withBreaker(remote(calls, "ok"), booking))).agent).toBe(booking)
      expect(yield* Ref.get(calls)).toBe(6)
    }).pipe(Effect.provide(CircuitBreaker.layer((agent) =>
      agent.startsWith("payments") ? { trip: CircuitBreaker.consecutiveFailures(1) } : {}
    ))))

  it.effect("invalid options are rejected as defects", () =>
    Effect.gen(function*() {
      const exits = yield* Effect.forEach(
        [
          { halfOpenProbes: 0 },
          { trip: CircuitBreaker.consecutiveFailures(0) },
          { trip: CircuitBreaker.failureRate({ threshold: 0.5, window: 3, minimumCalls: 4 }) },
          { trip: CircuitBreaker.failureRate({ threshold: 1.5, window: 3, minimumCalls: 3 }) }
        ],
        (options) => Effect.exit(CircuitBreaker.make(freshAgent(), options))
      )
      expect(exits.every((exit) => Exit.isFailure(exit) && exit.cause._tag === "Die")).toBe(true)
    }))
})

// -----------------------------------------------------------------------------
// Properties
// -----------------------------------------------------------------------------

type Step = { readonly _tag: "Call"; readonly result: Result } | { readonly _tag: "Advance"; readonly millis: number }

const stepArbitrary: FastCheck.Arbitrary<Step> = FastCheck.oneof(
  FastCheck.record({
    _tag: FastCheck.constant("Call" as const),
    result: FastCheck.constantFrom<Result>("ok", "fail", "fail", "ignored", "defect")
  }),
  FastCheck.record({ _tag: FastCheck.constant("Advance" as const), millis: FastCheck.integer({ min: 0, max: 1_500 }) })
)

const policyArbitrary: FastCheck.Arbitrary<CircuitBreaker.TripPolicy> = FastCheck.oneof(
  FastCheck.integer({ min: 1, max: 4 }).map(CircuitBreaker.consecutiveFailures),
  FastCheck.record({
    threshold: FastCheck.constantFrom(0.25, 0.5, 0.75, 1),
    window: FastCheck.integer({ min: 1, max: 6 }),
    minimumCalls: FastCheck.integer({ min: 1, max: 6 })
  }).map(({ minimumCalls, threshold, window }) =>
    CircuitBreaker.failureRate({ threshold, window: Math.max(window, minimumCalls), minimumCalls })
  )
)

type Model =
  | { readonly _tag: "Closed"; readonly consecutive: number; readonly window: ReadonlyArray<boolean> }
  | { readonly _tag: "Open"; readonly until: number }
  | { readonly _tag: "HalfOpen"; readonly successes: number }

/** What a sequential caller must observe, written independently of the implementation. */
const modelCall = (
  policy: CircuitBreaker.TripPolicy,
  openMillis: number,
  probeSuccesses: number,
  model: Model,
  now: number,
  result: Result
): { readonly admitted: boolean; readonly retryAfter: number; readonly next: Model; readonly path: Array<string> } => {
  const path: Array<string> = []
  let current = model
  if (current._tag === "Open") {
    if (now < current.until) return { admitted: false, retryAfter: current.until - now, next: current, path }
    current = { _tag: "HalfOpen", successes: 0 }
    path.push("Open>HalfOpen")
  }
  const trip = (from: string): Model => {
    path.push(`${from}>Open`)
    return { _tag: "Open", until: now + openMillis }
  }
  if (current._tag === "HalfOpen") {
    if (result === "fail") return { admitted: true, retryAfter: 0, next: trip("HalfOpen"), path }
    if (result !== "ok") return { admitted: true, retryAfter: 0, next: current, path }
    if (current.successes + 1 >= probeSuccesses) {
      path.push("HalfOpen>Closed")
      return { admitted: true, retryAfter: 0, next: { _tag: "Closed", consecutive: 0, window: [] }, path }
    }
    return { admitted: true, retryAfter: 0, next: { _tag: "HalfOpen", successes: current.successes + 1 }, path }
  }
  if (result === "ignored" || result === "defect") return { admitted: true, retryAfter: 0, next: current, path }
  const failed = result === "fail"
  if (policy._tag === "ConsecutiveFailures") {
    const consecutive = failed ? current.consecutive + 1 : 0
    const next = failed && consecutive >= policy.threshold ? trip("Closed") : { ...current, consecutive }
    return { admitted: true, retryAfter: 0, next, path }
  }
  const window = [...current.window, failed].slice(-policy.window)
  const failures = window.filter((f) => f).length
  const tripped = failed && window.length >= policy.minimumCalls && failures / window.length >= policy.threshold
  return { admitted: true, retryAfter: 0, next: tripped ? trip("Closed") : { ...current, window }, path }
}

describe("CircuitBreaker properties", () => {
  it.scoped.prop(
    "sequential calls follow the model: open never calls the remote, it closes only after the probes succeed",
    {
      policy: policyArbitrary,
      openMillis: FastCheck.integer({ min: 1, max: 1_000 }),
      probeSuccesses: FastCheck.integer({ min: 1, max: 3 }),
      steps: FastCheck.array(stepArbitrary, { maxLength: 80 })
    },
    ({ openMillis, policy, probeSuccesses, steps }) =>
      Effect.gen(function*() {
        const agent = freshAgent("prop")
        const breaker = yield* CircuitBreaker.make(agent, {
          trip: policy,
          openDuration: Duration.millis(openMillis),
          probeSuccesses
        })
        const queue = yield* breaker.subscribe
        const calls = yield* Ref.make(0)
        let model: Model = { _tag: "Closed", consecutive: 0, window: [] }
        let now = 0
        let rejections = 0
        const expectedPath: Array<string> = []
        for (const step of steps) {
          if (step._tag === "Advance") {
            yield* TestClock.adjust(Duration.millis(step.millis))
            now += step.millis
            continue
          }
          const expected = modelCall(policy, openMillis, probeSuccesses, model, now, step.result)
          const before = yield* Ref.get(calls)
          const exit = yield* Effect.exit(breaker.protect(remote(calls, step.result)))
          const invoked = (yield* Ref.get(calls)) - before
          if (expected.admitted) {
            expect(invoked).toBe(1)
            expect(
              Exit.isFailure(exit) && Exit.causeOption(exit).pipe(
                Option.flatMap((cause) => cause._tag === "Fail" ? Option.some(cause.error) : Option.none()),
                Option.exists((error) => error instanceof CircuitBreaker.CircuitOpen)
              )
            ).toBe(false)
          } else {
            rejections++
            expect(invoked).toBe(0)
            expect(exit).toEqual(Exit.fail(
              new CircuitBreaker.CircuitOpen({
                agent,
                retryAfter: Duration.millis(expected.retryAfter),
                state: "Open"
              })
            ))
          }
          model = expected.next
          for (const step of expected.path) expectedPath.push(step)
          expect(yield* breaker.state).toBe(model._tag)
        }
        const transitions = Chunk.toReadonlyArray(yield* Queue.takeAll(queue))
        expect(transitions.map((t) => `${t.from}>${t.to}`)).toEqual(expectedPath)
        expect(transitions.map((t) => t.sequence)).toEqual(transitions.map((_, i) => i + 1))
        expect(yield* metricsOf(agent)).toEqual({
          gauge: model._tag === "Closed" ? 0 : model._tag === "HalfOpen" ? 1 : 2,
          rejected: rejections
        })
      }),
    { fastCheck: { numRuns: 200 } }
  )

  it.scoped.prop(
    "concurrent callers: at most the configured probes run at once and every call is either run once or rejected",
    {
      probes: FastCheck.integer({ min: 1, max: 3 }),
      calls: FastCheck.array(
        FastCheck.record({
          result: FastCheck.constantFrom<Result>("ok", "fail", "ignored", "defect"),
          yields: FastCheck.integer({ min: 0, max: 5 })
        }),
        { minLength: 1, maxLength: 40 }
      )
    },
    ({ calls, probes }) =>
      Effect.gen(function*() {
        const agent = freshAgent("concurrent")
        // open for no time and never enough probe successes: after the first
        // failure every admitted call is a probe
        const breaker = yield* CircuitBreaker.make(agent, {
          trip: CircuitBreaker.consecutiveFailures(1),
          openDuration: Duration.zero,
          halfOpenProbes: probes,
          probeSuccesses: 1_000
        })
        const queue = yield* breaker.subscribe
        const invocations = yield* Ref.make(0)
        yield* Effect.either(breaker.protect(remote(invocations, "fail")))
        const running = yield* Ref.make(0)
        const maxRunning = yield* Ref.make(0)
        const probe = (result: Result, yields: number, invoked: Ref.Ref<boolean>) =>
          Effect.gen(function*() {
            yield* Ref.set(invoked, true)
            const now = yield* Ref.updateAndGet(running, (n) => n + 1)
            yield* Ref.update(maxRunning, (max) => Math.max(max, now))
            for (let i = 0; i < yields; i++) yield* Effect.yieldNow()
            return yield* remote(invocations, result)
          }).pipe(Effect.ensuring(Ref.update(running, (n) => n - 1)))

        const outcomes = yield* Effect.forEach(calls, ({ result, yields }) =>
          Effect.gen(function*() {
            const invoked = yield* Ref.make(false)
            const exit = yield* Effect.exit(breaker.protect(probe(result, yields, invoked)))
            const rejected = Exit.isFailure(exit) &&
              Option.exists(
                Exit.causeOption(exit),
                (cause) => cause._tag === "Fail" && cause.error instanceof CircuitBreaker.CircuitOpen
              )
            return { rejected, invoked: yield* Ref.get(invoked) }
          }), { concurrency: "unbounded" })

        expect(yield* Ref.get(maxRunning)).toBeLessThanOrEqual(probes)
        for (const outcome of outcomes) expect(outcome.invoked).toBe(!outcome.rejected)
        const rejections = outcomes.filter((o) => o.rejected).length
        expect(yield* Ref.get(invocations)).toBe(1 + calls.length - rejections)

        const transitions = Chunk.toReadonlyArray(yield* Queue.takeAll(queue))
        expect(transitions.some((t) => t.to === "Closed")).toBe(false)
        expect(transitions.map((t) => t.sequence)).toEqual(transitions.map((_, i) => i + 1))
        const state = yield* breaker.state
        expect(transitions[transitions.length - 1]?.to).toBe(state)
        expect(yield* metricsOf(agent)).toEqual({ gauge: state === "HalfOpen" ? 1 : 2, rejected: rejections })
      }),
    { fastCheck: { numRuns: 150 } }
  )

  it.scoped.prop(
    "concurrent callers on a closed breaker trip it exactly once and keep counters consistent",
    {
      threshold: FastCheck.integer({ min: 1, max: 5 }),
      calls: FastCheck.array(
        FastCheck.record({
          result: FastCheck.constantFrom<Result>("ok", "fail", "fail", "ignored"),
          yields: FastCheck.integer({ min: 0, max: 5 })
        }),
        { minLength: 1, maxLength: 40 }
      )
    },
    ({ calls, threshold }) =>
      Effect.gen(function*() {
        const agent = freshAgent("closed")
        const breaker = yield* CircuitBreaker.make(agent, {
          trip: CircuitBreaker.consecutiveFailures(threshold),
          openDuration: "1 minute"
        })
        const queue = yield* breaker.subscribe
        const invocations = yield* Ref.make(0)
        const outcomes = yield* Effect.forEach(
          calls,
          ({ result, yields }) =>
            breaker.protect(
              Effect.zipRight(
                Effect.forEach(Array.from({ length: yields }), () => Effect.yieldNow()),
                remote(invocations, result)
              )
            ).pipe(
              Effect.flip,
              Effect.map((e) => e instanceof CircuitBreaker.CircuitOpen),
              Effect.orElseSucceed(() => false)
            ),
          { concurrency: "unbounded" }
        )
        const rejections = outcomes.filter((rejected) => rejected).length
        expect(yield* Ref.get(invocations)).toBe(calls.length - rejections)
        const transitions = Chunk.toReadonlyArray(yield* Queue.takeAll(queue))
        // nothing moves the clock, so an open breaker stays open: at most one trip
        expect(transitions.map((t) => `${t.from}>${t.to}`)).toEqual(
          (yield* breaker.state) === "Open" ? ["Closed>Open"] : []
        )
        if (rejections > 0) expect(yield* breaker.state).toBe("Open")
        expect(yield* metricsOf(agent)).toEqual({
          gauge: (yield* breaker.state) === "Open" ? 2 : 0,
          rejected: rejections
        })
      }),
    { fastCheck: { numRuns: 150 } }
  )
})

// -----------------------------------------------------------------------------
// A real remote over HTTP
// -----------------------------------------------------------------------------

const listen = (handler: Http.RequestListener) =>
  Effect.acquireRelease(
    Effect.async<Http.Server>((resume) => {
      const server = Http.createServer(handler)
      server.listen(0, "127.0.0.1", () => {
        resume(Effect.succeed(server))
      })
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )

const urlOf = (server: Http.Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/`

/** A minimal HTTP call mapped to `A2AClientError`, standing in for the A2A client. */
const post = (url: string, attempts: Ref.Ref<number>) =>
  Effect.zipRight(
    Ref.update(attempts, (n) => n + 1),
    Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(url, { method: "POST", body: "{}", signal })
        return { status: response.status, body: await response.text() }
      },
      catch: (cause) => {
        const code = (cause as { cause?: { code?: unknown } }).cause?.code
        return new A2AClientError({
          agent: "booking",
          operation: "SendMessage",
          reason: code === "ECONNREFUSED" ? "ConnectionRefused" : "ConnectionLost",
          delivery: code === "ECONNREFUSED" ? "NotSent" : "Unknown",
          detail: String(code ?? cause)
        })
      }
    })
  ).pipe(Effect.flatMap(({ body, status }) =>
    status >= 400
      ? Effect.fail(
        new A2AClientError({
          agent: "booking",
          operation: "SendMessage",
          reason: "HttpStatus",
          delivery: "Unknown",
          detail: body,
          status
        })
      )
      : Effect.succeed(body)
  ))

describe("CircuitBreaker around a real HTTP call", () => {
  it.scopedLive("a server answering 503 stops receiving requests once the breaker is open", () =>
    Effect.gen(function*() {
      let hits = 0
      const server = yield* listen((_request, response) => {
        hits++
        response.writeHead(503).end("overloaded")
      })
      const breaker = yield* CircuitBreaker.make(freshAgent("http"), {
        trip: CircuitBreaker.consecutiveFailures(2),
        openDuration: "1 minute"
      })
      const attempts = yield* Ref.make(0)
      for (let i = 0; i < 2; i++) {
        const error = yield* Effect.flip(breaker.protect(post(urlOf(server), attempts)))
        expect(error).toMatchObject({ _tag: "A2AClientError", reason: "HttpStatus", status: 503 })
      }
      for (let i = 0; i < 5; i++) {
        yield* rejection(breaker.protect(post(urlOf(server), attempts)))
      }
      expect(hits).toBe(2)
      expect(yield* Ref.get(attempts)).toBe(2)
    }))

  it.scopedLive("a refused connection trips the breaker and the next call is rejected without connecting", () =>
    Effect.gen(function*() {
      const url = yield* Effect.scoped(Effect.map(listen((_request, response) => response.end()), urlOf))
      const breaker = yield* CircuitBreaker.make(freshAgent("refused"), {
        trip: CircuitBreaker.consecutiveFailures(1),
        openDuration: "1 minute"
      })
      const attempts = yield* Ref.make(0)
      const error = yield* Effect.flip(breaker.protect(post(url, attempts)))
      expect(error).toMatchObject({ _tag: "A2AClientError", reason: "ConnectionRefused", delivery: "NotSent" })
      expect(yield* breaker.state).toBe("Open")
      const open = yield* rejection(breaker.protect(post(url, attempts)))
      expect(open.state).toBe("Open")
      expect(yield* Ref.get(attempts)).toBe(1)
    }))
})
