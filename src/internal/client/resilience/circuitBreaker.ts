/**
 * The code behind `CircuitBreaker`: the breaker around the pure state machine
 * of `circuitState`, which reads the clock, publishes the changes and sets
 * the metrics.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleIntervals from "effect/ScheduleIntervals"
import * as Stream from "effect/Stream"
import * as SynchronizedRef from "effect/SynchronizedRef"
import { A2AClientError, type Reason } from "../../../A2AClientError.js"
import type * as CircuitBreaker from "../../../CircuitBreaker.js"
import { Failed } from "../../../RemoteOutcome.js"
import { withoutStackTrace } from "../../errors.js"
import { answerStatus } from "../call/answerStatus.js"
import { CircuitOpen } from "./circuitOpen.js"
import * as machine from "./circuitState.js"

/** @internal */
export const consecutiveFailures = (threshold: number): machine.Policy => ({ _tag: "ConsecutiveFailures", threshold })

/** @internal */
export const failureRate = (options: {
  readonly threshold: number
  readonly window: number
  readonly minimumCalls: number
}): machine.Policy => ({ _tag: "FailureRate", ...options })

const transportReasons: ReadonlyArray<Reason> = ["ConnectionRefused", "ConnectionLost", "Timeout", "StreamInterrupted"]

/** @internal */
export const remoteFailure = (options?: {
  readonly exclude?: ReadonlyArray<Reason> | undefined
  readonly failedOutcome?: boolean | undefined
}): CircuitBreaker.FailurePredicate => {
  const excluded = new Set(options?.exclude ?? [])
  const counts = (error: unknown): boolean =>
    error instanceof A2AClientError && !excluded.has(error.reason) &&
    (error.delivery === "Refused"
      // A server that answers and runs nothing is up, unless it sheds load (gRPC's RESOURCE_EXHAUSTED too).
      ? answerStatus(error) === 429
      // A 5xx counts whether or not its body held a JSON-RPC error (an SDK server's 500 carries one).
      : transportReasons.includes(error.reason) || (answerStatus(error) ?? 0) >= 500)
  const failedOutcome = options?.failedOutcome === true
  return (exit) =>
    Exit.isFailure(exit)
      ? Array.from(Cause.failures(exit.cause)).some(counts)
      : failedOutcome && exit.value instanceof Failed
}

/** @internal */
export const isRemoteFailure: CircuitBreaker.FailurePredicate = remoteFailure()

/** @internal */
export const stateGauge = Metric.gauge("a2a.circuit.state", {
  description: "Circuit breaker state per remote agent: 0 closed, 1 half-open, 2 open"
})

/** @internal */
export const rejectedCounter = Metric.counter("a2a.circuit.rejected", {
  description: "Calls rejected by an open or half-open circuit breaker",
  incremental: true
})

const stateCode = (state: CircuitBreaker.State): number => state === "Closed" ? 0 : state === "HalfOpen" ? 1 : 2

const positiveInt = (name: string, value: number): Effect.Effect<void> =>
  Number.isInteger(value) && value >= 1
    ? Effect.void
    : Effect.dieMessage(`CircuitBreaker: ${name} must be a positive integer, got ${value}`)

const validate = (config: machine.Config): Effect.Effect<void> => {
  const policy = config.policy
  return Effect.all([
    positiveInt("halfOpenProbes", config.probes),
    positiveInt("probeSuccesses", config.probeSuccesses),
    policy._tag === "ConsecutiveFailures"
      ? positiveInt("consecutiveFailures threshold", policy.threshold)
      : Effect.all([
        positiveInt("failureRate window", policy.window),
        positiveInt("failureRate minimumCalls", policy.minimumCalls),
        policy.minimumCalls <= policy.window && policy.threshold > 0 && policy.threshold <= 1
          ? Effect.void
          : Effect.dieMessage("CircuitBreaker: failureRate needs 0 < threshold <= 1 and minimumCalls <= window")
      ])
  ], { discard: true })
}

interface Cursor {
  readonly forTrip: number
  readonly delay: number
  readonly state: unknown
  readonly done: boolean
}

interface OpenDurations {
  /** The delays known now, read before a transition so that it stays pure. */
  readonly read: Effect.Effect<(trip: number) => number>
  /** Steps the schedule once trip `trip` has used its delay. */
  readonly advance: (trip: number) => Effect.Effect<void>
  readonly reset: Effect.Effect<void>
}

// The schedule is stepped ahead of time, one trip in advance, so that the
// transition to open reads its delay synchronously inside `Ref.modify`.
const openDurations = (
  openDuration: Duration.DurationInput | Schedule.Schedule<unknown, unknown>
): Effect.Effect<OpenDurations> => {
  if (!Schedule.isSchedule(openDuration)) {
    const millis = Duration.toMillis(Duration.decode(openDuration))
    const read = Effect.succeed(() => millis)
    return Effect.succeed({ read, advance: () => Effect.void, reset: Effect.void })
  }
  const schedule = openDuration
  const step = (cursor: Cursor): Effect.Effect<Cursor> =>
    cursor.done
      ? Effect.succeed({ ...cursor, forTrip: cursor.forTrip + 1 })
      : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(schedule.step(now, cursor.forTrip + 1, cursor.state), ([state, _, decision]) =>
          ScheduleDecision.isDone(decision)
            ? { forTrip: cursor.forTrip + 1, delay: cursor.delay, state, done: true }
            : {
              forTrip: cursor.forTrip + 1,
              delay: Math.max(0, ScheduleIntervals.start(decision.intervals) - now),
              state,
              done: false
            }))
  return Effect.gen(function*() {
    const first = yield* step({ forTrip: 0, delay: 0, state: schedule.initial, done: false })
    const second = yield* step(first)
    const cursor = yield* SynchronizedRef.make(second)
    return {
      read: Effect.map(Ref.get(cursor), (next) => (trip: number) => trip <= 1 ? first.delay : next.delay),
      advance: (trip) =>
        trip <= 1
          ? Effect.void
          : SynchronizedRef.updateEffect(cursor, (next) => next.forTrip === trip ? step(next) : Effect.succeed(next)),
      reset: Ref.set(cursor, second)
    }
  })
}

/** @internal */
export const make = (
  agent: string,
  options: CircuitBreaker.Options = {}
): Effect.Effect<CircuitBreaker.CircuitBreaker> =>
  Effect.gen(function*() {
    const probes = options.halfOpenProbes ?? 1
    const config: machine.Config = {
      policy: options.trip ?? consecutiveFailures(5),
      probes,
      probeSuccesses: options.probeSuccesses ?? probes
    }
    yield* validate(config)
    const isFailure = options.isFailure ?? isRemoteFailure
    const durations = yield* openDurations(options.openDuration ?? Duration.seconds(30))
    const ref = yield* Ref.make(machine.closed(0, 0))
    const pubsub = yield* PubSub.sliding<CircuitBreaker.Transition>(1024)
    const gauge = Metric.tagged(stateGauge, "agent", agent)
    const rejected = Metric.tagged(rejectedCounter, "agent", agent)
    yield* Metric.set(gauge, 0)

    // The gauge is set from the state read after the change, so that two
    // changes published in the other order still leave the latest state.
    const publish = (change: machine.Change, now: number): Effect.Effect<void> =>
      Effect.zipRight(
        PubSub.publish(pubsub, {
          agent,
          from: change.from,
          to: change.to._tag,
          at: now,
          sequence: change.to.epoch,
          trips: change.to._tag === "Closed" ? 0 : change.to.trips,
          openFor: change.to._tag === "Open" ? Option.some(Duration.millis(change.openFor)) : Option.none()
        }),
        Effect.flatMap(Ref.get(ref), (state) => Metric.set(gauge, stateCode(state._tag)))
      )

    const admitAt: Effect.Effect<machine.Permit, CircuitOpen> = Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        Effect.flatMap(Ref.modify(ref, (state) => machine.admit(config, state, now)), (admission) => {
          if (admission._tag === "Rejected") {
            return Effect.zipRight(
              admission.change === undefined
                ? Metric.increment(rejected)
                : Effect.zipRight(publish(admission.change, now), Metric.increment(rejected)),
              Effect.fail(withoutStackTrace(() =>
                new CircuitOpen({
                  agent,
                  retryAfter: Duration.millis(admission.retryAfter),
                  state: admission.state
                }, true)
              ))
            )
          }
          return admission.change === undefined
            ? Effect.succeed(admission.permit)
            : Effect.as(publish(admission.change, now), admission.permit)
        })
    )

    // A closed breaker admits every call without changing its state, so the
    // common case needs neither the clock nor a modification.
    const admit: Effect.Effect<machine.Permit, CircuitOpen> = Effect.flatMap(
      Ref.get(ref),
      (state) => state._tag === "Closed" ? Effect.succeed({ epoch: state.epoch, probe: false }) : admitAt
    )

    const verdictOf = (exit: Exit.Exit<unknown, unknown>): machine.Verdict =>
      Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)
        ? "Ignored"
        : isFailure(exit)
        ? "Failure"
        : Exit.isSuccess(exit)
        ? "Success"
        : "Ignored"

    const noDelay = () => 0
    const noDelays = Effect.succeed(noDelay)

    const complete = (permit: machine.Permit, exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> => {
      let verdict: machine.Verdict
      try {
        verdict = verdictOf(exit)
      } catch (defect) {
        // A throwing `isFailure` must still give a probe's slot back, or the breaker stays half-open for good.
        return Effect.zipRight(settle(permit, "Ignored"), Effect.die(defect))
      }
      return settle(permit, verdict)
    }

    const settle = (permit: machine.Permit, verdict: machine.Verdict): Effect.Effect<void> => {
      if (verdict === "Ignored" && !permit.probe) return Effect.void
      // only a failure or a probe can change the state, and only then is the time needed
      if (verdict === "Success" && !permit.probe) {
        return Ref.update(ref, (state) => machine.record(config, state, permit, verdict, 0, noDelay)[1])
      }
      return Effect.flatMap(
        Effect.zip(Clock.currentTimeMillis, verdict === "Failure" ? durations.read : noDelays),
        ([now, delayFor]) => {
          const record = Ref.modify(ref, (state) => machine.record(config, state, permit, verdict, now, delayFor))
          return Effect.flatMap(record, (change) => {
            if (change === undefined) return Effect.void
            const follow = change.to._tag === "Open"
              ? durations.advance(change.to.trips)
              : change.to._tag === "Closed"
              ? durations.reset
              : Effect.void
            return Effect.zipRight(follow, publish(change, now))
          })
        }
      )
    }

    const protect = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | CircuitOpen, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(
          admit,
          (permit) =>
            Effect.flatMap(Effect.exit(restore(effect)), (exit) => Effect.zipRight(complete(permit, exit), exit))
        )
      )

    return {
      agent,
      protect,
      state: Effect.map(Ref.get(ref), (state) => state._tag),
      transitions: Stream.fromPubSub(pubsub),
      subscribe: PubSub.subscribe(pubsub)
    } satisfies CircuitBreaker.CircuitBreaker
  })

/** @internal */
export class Registry extends Context.Tag("effect-a2a/CircuitBreaker/Registry")<Registry, {
  readonly forAgent: (agent: string) => Effect.Effect<CircuitBreaker.CircuitBreaker>
}>() {}

/** @internal */
export const makeRegistry = (
  options: CircuitBreaker.Options | ((agent: string) => CircuitBreaker.Options) = {}
): Effect.Effect<Registry["Type"]> =>
  Effect.map(SynchronizedRef.make(new Map<string, CircuitBreaker.CircuitBreaker>()), (breakers) => ({
    forAgent: (agent) =>
      Effect.flatMap(Ref.get(breakers), (known) => {
        const existing = known.get(agent)
        if (existing !== undefined) return Effect.succeed(existing)
        return SynchronizedRef.modifyEffect(breakers, (known) => {
          const existing = known.get(agent)
          if (existing !== undefined) return Effect.succeed([existing, known] as const)
          return Effect.map(
            make(agent, typeof options === "function" ? options(agent) : options),
            (breaker) => [breaker, new Map(known).set(agent, breaker)] as const
          )
        })
      })
  }))

/** @internal */
export const layer = (
  options: CircuitBreaker.Options | ((agent: string) => CircuitBreaker.Options) = {}
): Layer.Layer<Registry> => Layer.effect(Registry, makeRegistry(options))

/** @internal */
export const forAgent = (agent: string): Effect.Effect<CircuitBreaker.CircuitBreaker, never, Registry> =>
  Effect.flatMap(Registry, (registry) => registry.forAgent(agent))

/** @internal */
export const withBreaker: typeof CircuitBreaker.withBreaker = dual(
  2,
  <A, E, R>(effect: Effect.Effect<A, E, R>, agent: string): Effect.Effect<A, E | CircuitOpen, R | Registry> =>
    Effect.flatMap(forAgent(agent), (breaker) => breaker.protect(effect))
)
