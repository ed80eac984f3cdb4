/**
 * The code behind `GuardedRemoteAgent`: the retry inside the breaker, the
 * breaker inside the guard, and every typed ending of the call as a result.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type * as A2AClientError from "../../A2AClientError.js"
import type { Event } from "../../Agent.js"
import type * as CircuitBreaker from "../../CircuitBreaker.js"
import type { GuardedRemoteAgent, Options } from "../../GuardedRemoteAgent.js"
import type * as RemoteAgent from "../../RemoteAgent.js"
import type * as RemoteOutcome from "../../RemoteOutcome.js"
import type * as RetryPolicy from "../../RetryPolicy.js"
import * as circuitBreaker from "../client/resilience/circuitBreaker.js"
import type { CircuitOpen } from "../client/resilience/circuitOpen.js"
import * as retryPolicy from "../client/resilience/retryPolicy.js"
import * as internalAgent from "./agent.js"
import * as guard from "./guard.js"

/** @internal */
export const make = (remote: RemoteAgent.RemoteAgent, options: Options = {}): GuardedRemoteAgent => {
  const name = remote.name
  const policy = options.retry
  const retry = (
    call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>,
    input: RemoteAgent.Input,
    callOptions?: RemoteAgent.CallOptions
  ) => {
    if (policy === undefined) return call
    const request: RetryPolicy.Request = {
      // An empty key is no key: the server does not deduplicate on it.
      idempotent: callOptions?.idempotencyKey !== undefined && callOptions.idempotencyKey !== "",
      continuesTask: typeof input !== "string" && input.taskId !== undefined && input.taskId !== ""
    }
    return typeof policy === "function" ? policy(call, request) : retryPolicy.retry(policy, request)(call)
  }
  const protect = options.breaker === undefined
    ? <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E | CircuitOpen> => effect
    : options.breaker.protect
  const completed = options.completedText ?? guard.completedText

  // Effect.either only sees the typed channel: defects and interruption pass through untouched.
  const guarded = (
    call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>
  ): Effect.Effect<internalAgent.Result> =>
    Effect.map(
      Effect.either(protect(call)),
      Either.match({
        onLeft: (error) =>
          internalAgent.Result.make({
            agent: name,
            text: guard.errorText(error),
            outcome: Option.none(),
            error: Option.some(error)
          }),
        onRight: (outcome) =>
          internalAgent.Result.make({
            agent: name,
            text: guard.outcomeText(outcome, completed),
            outcome: Option.some(outcome),
            error: Option.none()
          })
      })
    )

  const run = (input: string): Stream.Stream<Event> =>
    internalAgent.eventsOf(
      name,
      (progress) => guarded(retry(internalAgent.foldRemote(name, remote.stream(input), progress), input))
    )

  return {
    name,
    description: guard.describeRemote(remote, options.description),
    remote,
    // Suspended: a retry policy function that throws is a defect of the call, as in `run`, not a throw here.
    send: (input, callOptions) =>
      Effect.suspend(() => guarded(retry(remote.send(input, callOptions), input, callOptions))),
    run
  }
}

/** @internal */
export const withBreaker = (
  remote: RemoteAgent.RemoteAgent,
  options: Omit<Options, "breaker"> = {}
): Effect.Effect<GuardedRemoteAgent, never, CircuitBreaker.Registry> =>
  Effect.map(circuitBreaker.forAgent(remote.name), (breaker) => make(remote, { ...options, breaker }))
