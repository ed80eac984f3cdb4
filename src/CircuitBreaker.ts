/**
 * A circuit breaker per remote agent: after the remote keeps failing, calls
 * are rejected at once with a typed {@link CircuitOpen} instead of waiting for
 * a timeout on every turn.
 *
 * States: `Closed` (calls pass, outcomes are counted), `Open` (every call is
 * rejected until the open duration has passed), `HalfOpen` (a bounded number
 * of probe calls pass; enough successful probes close the breaker, a failing
 * probe opens it again).
 *
 * The state lives in a `Ref` and time comes from `Clock`, so a breaker runs
 * no timer and is driven by `TestClock` in tests.
 *
 * **Composition.** Put timeout and retry inside the breaker and the breaker
 * inside the guard:
 *
 * - the timeout inside, so that a hung remote ends as an `A2AClientError`
 *   `Timeout` that counts as a failure instead of holding a probe slot;
 * - the retry inside, so that one logical call is one outcome for the breaker
 *   and a retry loop never keeps calling through an open breaker;
 * - the guard (`GuardedRemoteAgent`) outside, so that {@link CircuitOpen}
 *   becomes `REMOTE_CIRCUIT_OPEN` text like every other remote ending.
 *
 * @example
 * ```ts
 * import { Effect, Schedule } from "effect"
 * import { A2AClientError, CircuitBreaker } from "effect-a2a"
 *
 * // the remote call, with its own timeout
 * declare const send: Effect.Effect<string, A2AClientError.A2AClientError>
 *
 * const program = Effect.gen(function*() {
 *   const breaker = yield* CircuitBreaker.forAgent("booking")
 *   return yield* send.pipe(
 *     Effect.retry(Schedule.recurs(2)), // retry inside the breaker
 *     breaker.protect // Effect<string, A2AClientError | CircuitOpen>
 *   )
 * }).pipe(Effect.provide(CircuitBreaker.layer({ trip: CircuitBreaker.consecutiveFailures(5) })))
 * ```
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import type * as Option from "effect/Option"
import type * as Queue from "effect/Queue"
import type * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { Reason } from "./A2AClientError.js"
import * as internal from "./internal/client/resilience/circuitBreaker.js"
import * as circuitOpen from "./internal/client/resilience/circuitOpen.js"
import type * as circuitState from "./internal/client/resilience/circuitState.js"

/**
 * The state of a breaker.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * declare const breaker: CircuitBreaker.CircuitBreaker
 * // skip an optional call while the remote is known to be failing
 * const worthCalling = Effect.map(breaker.state, (state: CircuitBreaker.State) => state === "Closed")
 * ```
 * @category models
 * @since 0.1.0
 */
export const State = Schema.Literal("Closed", "Open", "HalfOpen")

/**
 * @category models
 * @since 0.1.0
 */
export type State = typeof State.Type

/**
 * A call rejected by a breaker without reaching the remote agent.
 * `retryAfter` is how long the breaker stays open; it is zero when the
 * breaker is half-open and all probe slots are taken.
 *
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const error = new CircuitBreaker.CircuitOpen({ agent: "booking", retryAfter: Duration.seconds(20), state: "Open" })
 * error.message // "booking: circuit open, retry after 20s"
 * ```
 * @category errors
 * @since 0.1.0
 */
export const CircuitOpen: typeof circuitOpen.CircuitOpen = circuitOpen.CircuitOpen

/**
 * @category errors
 * @since 0.1.0
 */
export type CircuitOpen = circuitOpen.CircuitOpen

/**
 * When a closed breaker trips.
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const trip: CircuitBreaker.TripPolicy = process.env.NODE_ENV === "production"
 *   ? CircuitBreaker.failureRate({ threshold: 0.5, window: 20, minimumCalls: 10 })
 *   : CircuitBreaker.consecutiveFailures(3)
 * const BreakersLive = CircuitBreaker.layer({ trip })
 * ```
 * @category policies
 * @since 0.1.0
 */
export type TripPolicy = circuitState.Policy

/**
 * Trips after `threshold` failures in a row; a success resets the count.
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "effect-a2a"
 * CircuitBreaker.consecutiveFailures(5)
 * ```
 * @category policies
 * @since 0.1.0
 */
export const consecutiveFailures: (threshold: number) => TripPolicy = internal.consecutiveFailures

/**
 * Trips when, over the last `window` counted calls and once at least
 * `minimumCalls` were counted, the share of failures reaches `threshold`
 * (between 0 and 1).
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "effect-a2a"
 * CircuitBreaker.failureRate({ threshold: 0.5, window: 20, minimumCalls: 10 })
 * ```
 * @category policies
 * @since 0.1.0
 */
export const failureRate: (options: {
  readonly threshold: number
  readonly window: number
  readonly minimumCalls: number
}) => TripPolicy = internal.failureRate

/**
 * Decides whether the end of a protected call counts as a failure of the
 * remote agent. Interruption by the caller never counts, whatever the
 * predicate says. A call that is neither a failure nor a success (an error or
 * defect the predicate does not count) leaves the counts unchanged.
 *
 * @example
 * ```ts
 * import { Cause, Exit } from "effect"
 * import { A2AClientError, CircuitBreaker } from "effect-a2a"
 *
 * // the default, and also HTTP 429 (the remote sheds load)
 * const isFailure: CircuitBreaker.FailurePredicate = (exit) =>
 *   CircuitBreaker.isRemoteFailure(exit) ||
 *   (Exit.isFailure(exit) && Array.from(Cause.failures(exit.cause)).some((e) =>
 *     e instanceof A2AClientError.A2AClientError && e.status === 429
 *   ))
 * const breaker = CircuitBreaker.make("booking", { isFailure })
 * ```
 * @category policies
 * @since 0.1.0
 */
export type FailurePredicate = (exit: Exit.Exit<unknown, unknown>) => boolean

/**
 * Builds a {@link FailurePredicate}. By default it counts an
 * `A2AClientError` whose reason is `ConnectionRefused`, `ConnectionLost`,
 * `Timeout` or `StreamInterrupted`, or any with a 5xx HTTP status (`HttpStatus`,
 * or `ProtocolError` when the 5xx answer held a JSON-RPC error). A refusal
 * (delivery `Refused`: the server answered and ran nothing) counts only when
 * it is a 429, the server shedding load.
 * `exclude` removes reasons; `failedOutcome` also counts a `Failed`
 * `RemoteOutcome` returned on the success channel.
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "effect-a2a"
 *
 * // a FAILED task counts, a timeout does not
 * const isFailure = CircuitBreaker.remoteFailure({ failedOutcome: true, exclude: ["Timeout"] })
 * ```
 * @category policies
 * @since 0.1.0
 */
export const remoteFailure: (options?: {
  readonly exclude?: ReadonlyArray<Reason> | undefined
  readonly failedOutcome?: boolean | undefined
}) => FailurePredicate = internal.remoteFailure

/**
 * The default {@link FailurePredicate}: `remoteFailure()`.
 *
 * @example
 * ```ts
 * import { Exit } from "effect"
 * import { A2AClientError, CircuitBreaker } from "effect-a2a"
 *
 * const timeout = new A2AClientError.A2AClientError({
 *   agent: "booking", operation: "SendMessage", reason: "Timeout", delivery: "Unknown", detail: "no answer in 30s"
 * })
 * CircuitBreaker.isRemoteFailure(Exit.fail(timeout)) // true
 * CircuitBreaker.isRemoteFailure(Exit.fail(new Error("a bug of ours"))) // false
 * ```
 * @category policies
 * @since 0.1.0
 */
export const isRemoteFailure: FailurePredicate = internal.isRemoteFailure

/**
 * How a breaker trips, how long it stays open and how it probes the remote again.
 *
 * @example
 * ```ts
 * import { Schedule } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const options: CircuitBreaker.Options = {
 *   trip: CircuitBreaker.consecutiveFailures(3),
 *   openDuration: Schedule.exponential("2 seconds"), // 2s, 4s, 8s, ... for trips in a row
 *   halfOpenProbes: 2,
 *   isFailure: CircuitBreaker.remoteFailure({ failedOutcome: true })
 * }
 * const BreakersLive = CircuitBreaker.layer(options)
 * ```
 * @category options
 * @since 0.1.0
 */
export interface Options {
  /** When to trip; `consecutiveFailures(5)` by default. */
  readonly trip?: TripPolicy | undefined
  /**
   * How long the breaker stays open: a fixed duration (30 seconds by
   * default) or a `Schedule` whose nth delay is used for the nth trip in a row,
   * counted again from the first delay once the breaker closes. When the
   * schedule ends, its last delay is kept.
   */
  readonly openDuration?: Duration.DurationInput | Schedule.Schedule<unknown, unknown> | undefined
  /** How many probe calls may run at once while half-open; 1 by default. */
  readonly halfOpenProbes?: number | undefined
  /** How many probes must succeed before the breaker closes; `halfOpenProbes` by default. */
  readonly probeSuccesses?: number | undefined
  /** What counts as a failure; {@link isRemoteFailure} by default. */
  readonly isFailure?: FailurePredicate | undefined
}

/**
 * A change of state, published on {@link CircuitBreaker.transitions}.
 * `sequence` grows by one with each change of the same breaker; concurrent
 * callers may publish two changes in the other order, so sort by `sequence`
 * when the order matters.
 *
 * @example
 * ```ts
 * import { Duration, Option } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const describe = (t: CircuitBreaker.Transition): string =>
 *   `${t.agent}: ${t.from} -> ${t.to}` +
 *   Option.match(t.openFor, { onNone: () => "", onSome: (d) => ` for ${Duration.format(d)}` })
 * // "booking: Closed -> Open for 30s"
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Transition {
  readonly agent: string
  readonly from: State
  readonly to: State
  /** `Clock` time of the change, in milliseconds. */
  readonly at: number
  readonly sequence: number
  /** Trips in a row since the breaker last closed. */
  readonly trips: number
  /** How long the breaker stays open, when `to` is `"Open"`. */
  readonly openFor: Option.Option<Duration.Duration>
}

/**
 * The breaker of one remote agent.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { A2AClientError, CircuitBreaker } from "effect-a2a"
 *
 * declare const send: Effect.Effect<string, A2AClientError.A2AClientError>
 *
 * const program = Effect.gen(function*() {
 *   const breaker: CircuitBreaker.CircuitBreaker = yield* CircuitBreaker.make("booking")
 *   const reply = yield* breaker.protect(send) // fails with CircuitOpen, without calling, while open
 *   yield* Effect.log(`${breaker.agent} is ${yield* breaker.state}`)
 *   return reply
 * })
 * ```
 * @category models
 * @since 0.1.0
 */
export interface CircuitBreaker {
  readonly agent: string
  /**
   * Runs `effect` when the breaker admits it, and fails at once with
   * {@link CircuitOpen}, without running it, when it does not.
   */
  readonly protect: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R>
  /** The current state. An open breaker whose duration has passed reports `"Open"` until a call probes it. */
  readonly state: Effect.Effect<State>
  /** Every change of state from the moment the stream starts. */
  readonly transitions: Stream.Stream<Transition>
  /** A subscription to the changes of state that is active as soon as it is returned. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<Transition>, never, Scope.Scope>
}

/**
 * The gauge of each breaker's state, tagged with `agent`: 0 closed,
 * 1 half-open, 2 open. Breakers of one agent in one process (two registries)
 * share it: each sets it when it is made and when its state changes, so it
 * shows the latest of them.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const bookingState = Metric.value(Metric.tagged(CircuitBreaker.stateGauge, "agent", "booking")).pipe(
 *   Effect.map((gauge) => gauge.value) // 0 closed, 1 half-open, 2 open
 * )
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const stateGauge: Metric.Metric.Gauge<number> = internal.stateGauge

/**
 * The counter of calls rejected by a breaker, tagged with `agent`.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * // calls to booking that never left this process
 * const rejected = Metric.value(Metric.tagged(CircuitBreaker.rejectedCounter, "agent", "booking")).pipe(
 *   Effect.map((counter) => counter.count)
 * )
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const rejectedCounter: Metric.Metric.Counter<number> = internal.rejectedCounter

/**
 * Creates the breaker of one remote agent.
 *
 * @example
 * ```ts
 * import { Effect, Schedule } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const breaker = CircuitBreaker.make("booking", {
 *   trip: CircuitBreaker.failureRate({ threshold: 0.5, window: 20, minimumCalls: 10 }),
 *   openDuration: Schedule.exponential("1 second").pipe(Schedule.either(Schedule.spaced("1 minute"))),
 *   halfOpenProbes: 2
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make: (agent: string, options?: Options) => Effect.Effect<CircuitBreaker> = internal.make

/**
 * One breaker per remote agent name, created on first use.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * // a fresh registry per test, so that no breaker carries its state into the next test
 * const isolated = <A, E>(test: Effect.Effect<A, E, CircuitBreaker.Registry>) =>
 *   Effect.provideServiceEffect(test, CircuitBreaker.Registry, CircuitBreaker.makeRegistry())
 * ```
 * @category tags
 * @since 0.1.0
 */
export const Registry: typeof internal.Registry = internal.Registry

/**
 * @category tags
 * @since 0.1.0
 */
export type Registry = internal.Registry

/**
 * Creates a {@link Registry}. `options` may depend on the agent name.
 *
 * @example
 * ```ts
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const registry = CircuitBreaker.makeRegistry((agent) =>
 *   agent === "payments" ? { trip: CircuitBreaker.consecutiveFailures(2) } : {}
 * )
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const makeRegistry: (
  options?: Options | ((agent: string) => Options)
) => Effect.Effect<Registry["Type"]> = internal.makeRegistry

/**
 * A {@link Registry} whose breakers all use `options` (or the options
 * returned for the agent name).
 *
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * const BreakersLive = CircuitBreaker.layer({ trip: CircuitBreaker.consecutiveFailures(3), openDuration: Duration.seconds(10) })
 * ```
 * @category layers
 * @since 0.1.0
 */
export const layer: (options?: Options | ((agent: string) => Options)) => Layer.Layer<Registry> = internal.layer

/**
 * The breaker of `agent` from the {@link Registry}.
 *
 * @example
 * ```ts
 * import { Console, Effect, Stream } from "effect"
 * import { CircuitBreaker } from "effect-a2a"
 *
 * // log every change of state of the booking breaker
 * const watch = Effect.gen(function*() {
 *   const breaker = yield* CircuitBreaker.forAgent("booking")
 *   yield* Stream.runForEach(breaker.transitions, (t) => Console.log(`booking: ${t.from} -> ${t.to}`))
 * })
 * ```
 * @category accessors
 * @since 0.1.0
 */
export const forAgent: (agent: string) => Effect.Effect<CircuitBreaker, never, Registry> = internal.forAgent

/**
 * Protects an effect with the breaker of `agent` from the {@link Registry}.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { A2AClientError, CircuitBreaker } from "effect-a2a"
 *
 * declare const send: Effect.Effect<string, A2AClientError.A2AClientError>
 * const guarded = send.pipe(CircuitBreaker.withBreaker("booking"))
 * const same = CircuitBreaker.withBreaker(send, "booking")
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const withBreaker: {
  (agent: string): <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | CircuitOpen, R | Registry>
  <A, E, R>(effect: Effect.Effect<A, E, R>, agent: string): Effect.Effect<A, E | CircuitOpen, R | Registry>
} = internal.withBreaker
