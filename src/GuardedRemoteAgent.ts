/**
 * A remote agent whose every ending is explicit text that a parent model
 * reads, with a fixed prefix an instruction can refer to:
 *
 * | ending | text |
 * | --- | --- |
 * | completed | the status text and data, then each artifact's text and data (data parts as compact JSON, at most 2,000 characters each) |
 * | failed | `REMOTE_FAILED <status text, with its error_id>` |
 * | call failed (`A2AClientError`) | `REMOTE_UNAVAILABLE: <what is known about delivery> (<agent>: <reason>)` |
 * | call refused (`A2AClientError`, delivery `Refused`) | `REMOTE_REFUSED <A2A error name or HTTP status>: the request was refused; nothing ran (<agent>: <reason>)` |
 * | call refused for its credentials (HTTP 401 or 403, gRPC `UNAUTHENTICATED` or `PERMISSION_DENIED`) | `REMOTE_REFUSED HTTP 401: the request was refused for authentication (no valid credentials were given); nothing ran (<agent>: <reason>)`; for 403 `(the credentials given do not allow it)` |
 * | canceled | `REMOTE_CANCELED` |
 * | rejected | `REMOTE_REJECTED <reason>` |
 * | input required | `REMOTE_INPUT_REQUIRED <question>` |
 * | auth required | `REMOTE_AUTH_REQUIRED` |
 * | breaker open | `REMOTE_CIRCUIT_OPEN retry after <duration>: ...` |
 *
 * The delivery wording is honest: "the request was not submitted" only when
 * the client proved it never left (`NotSent`, and every `CircuitOpen`);
 * "nothing ran" only when the server answered that it did not act on it
 * (`Refused`); when it is `Unknown`, "the outcome is unknown: no task was
 * confirmed". It never says a failure happened when it does not know.
 *
 * Only the typed failures of the remote call (`A2AClientError`,
 * `CircuitOpen`) are converted. A defect (a bug in local code, in a callback
 * or in the retry policy) stays a defect and never becomes text.
 *
 * Composition: the retry runs inside the breaker (one logical call is one
 * outcome for the breaker), the breaker inside the guard.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as A2AClientError from "./A2AClientError.js"
import type * as Agent from "./Agent.js"
import type * as CircuitBreaker from "./CircuitBreaker.js"
import * as guard from "./internal/agent/guard.js"
import * as internal from "./internal/agent/guardedRemoteAgent.js"
import type * as RemoteAgent from "./RemoteAgent.js"
import type * as RemoteOutcome from "./RemoteOutcome.js"
import type * as RetryPolicy from "./RetryPolicy.js"

/**
 * The prefix of a FAILED remote task: `REMOTE_FAILED <status text, with its
 * error_id>`. Each prefix below is exported so that instructions and tests
 * refer to the same text.
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent } from "effect-a2a"
 * const instruction = `If a tool answers ${GuardedRemoteAgent.FAILED}, say the action could not be completed.`
 * ```
 * @category markers
 * @since 0.1.0
 */
export const FAILED: "REMOTE_FAILED" = guard.FAILED

/**
 * A failed call: `REMOTE_UNAVAILABLE: <what is known about delivery> (<agent>: <reason>)`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * declare const booking: GuardedRemoteAgent.GuardedRemoteAgent
 * const reply = Effect.map(booking.send("book flight 4821 for Ana"), (result) =>
 *   result.text.startsWith(GuardedRemoteAgent.UNAVAILABLE) ? "Booking cannot be reached right now." : result.text)
 * ```
 * @category markers
 * @since 0.1.0
 */
export const UNAVAILABLE: "REMOTE_UNAVAILABLE" = guard.UNAVAILABLE

/**
 * A refused call: `REMOTE_REFUSED <A2A error name or HTTP status>: the
 * request was refused; nothing ran (<agent>: <reason>)`. The server answered
 * at once and ran nothing (a message to a task that is still running, an
 * idempotency key reused with another request, an unknown task, a 4xx).
 * Refused for the caller's credentials (HTTP 401 or 403, gRPC
 * `UNAUTHENTICATED` or `PERMISSION_DENIED`), it says so: `the request was
 * refused for authentication (…)`. The remote is up; the call fails the same
 * way until the credentials change.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * declare const booking: GuardedRemoteAgent.GuardedRemoteAgent
 * // the booking service is up, and said no: worth telling apart from "cannot be reached"
 * const refused = Effect.map(booking.send("book flight 4821 for Ana"), (result) =>
 *   result.text.startsWith(GuardedRemoteAgent.REFUSED))
 * ```
 * @category markers
 * @since 0.1.0
 */
export const REFUSED: "REMOTE_REFUSED" = guard.REFUSED

/**
 * A CANCELED remote task.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * declare const answer: string // what the booking tool answered
 * const canceled = Option.contains(GuardedRemoteAgent.markerOf(answer), GuardedRemoteAgent.CANCELED)
 * ```
 * @category markers
 * @since 0.1.0
 */
export const CANCELED: "REMOTE_CANCELED" = guard.CANCELED

/**
 * A REJECTED remote task: `REMOTE_REJECTED <reason>`.
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * const instruction =
 *   `When a tool answers ${GuardedRemoteAgent.REJECTED} <reason>, tell the user the reason and do not call it again.`
 * ```
 * @category markers
 * @since 0.1.0
 */
export const REJECTED: "REMOTE_REJECTED" = guard.REJECTED

/**
 * A remote task waiting for input: `REMOTE_INPUT_REQUIRED <question>`.
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * // the question to put to the user, when the remote agent asked one
 * const questionOf = (answer: string): string | undefined =>
 *   answer.startsWith(`${GuardedRemoteAgent.INPUT_REQUIRED} `)
 *     ? answer.slice(GuardedRemoteAgent.INPUT_REQUIRED.length + 1)
 *     : undefined
 * ```
 * @category markers
 * @since 0.1.0
 */
export const INPUT_REQUIRED: "REMOTE_INPUT_REQUIRED" = guard.INPUT_REQUIRED

/**
 * A remote task waiting for authorization.
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * const instruction =
 *   `If a tool answers ${GuardedRemoteAgent.AUTH_REQUIRED}, ask the user to sign in to that service first.`
 * ```
 * @category markers
 * @since 0.1.0
 */
export const AUTH_REQUIRED: "REMOTE_AUTH_REQUIRED" = guard.AUTH_REQUIRED

/**
 * A call rejected by the breaker: `REMOTE_CIRCUIT_OPEN retry after <duration>: ...`.
 *
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { CircuitBreaker, GuardedRemoteAgent } from "effect-a2a"
 *
 * const text = GuardedRemoteAgent.errorText(
 *   new CircuitBreaker.CircuitOpen({ agent: "booking", retryAfter: Duration.seconds(20), state: "Open" })
 * )
 * // "REMOTE_CIRCUIT_OPEN retry after 20s: the request was not submitted (booking failed repeatedly)"
 * ```
 * @category markers
 * @since 0.1.0
 */
export const CIRCUIT_OPEN: "REMOTE_CIRCUIT_OPEN" = guard.CIRCUIT_OPEN

/**
 * Every prefix, in one list.
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * const instruction = `Tool answers starting with ${GuardedRemoteAgent.markers.join(", ")} are not results: ` +
 *   "report them to the user as they are."
 * ```
 * @category markers
 * @since 0.1.0
 */
export const markers: ReadonlyArray<Marker> = guard.markers

/**
 * One of the prefixes of {@link markers}.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * const worthRetrying = (marker: GuardedRemoteAgent.Marker): boolean =>
 *   marker === GuardedRemoteAgent.UNAVAILABLE || marker === GuardedRemoteAgent.CIRCUIT_OPEN
 * declare const answer: string
 * const retryLater = GuardedRemoteAgent.markerOf(answer).pipe(Option.exists(worthRetrying))
 * ```
 * @category markers
 * @since 0.1.0
 */
export type Marker = guard.Marker

/**
 * The failures a guard turns into text.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { CircuitBreaker, GuardedRemoteAgent, RemoteAgent } from "effect-a2a"
 *
 * declare const remote: RemoteAgent.RemoteAgent
 * declare const breaker: CircuitBreaker.CircuitBreaker
 * // the text a guard gives, for a call made by hand
 * const text: Effect.Effect<string> = breaker.protect(remote.send("ping")).pipe(Effect.match({
 *   onFailure: (error: GuardedRemoteAgent.GuardError) => GuardedRemoteAgent.errorText(error),
 *   onSuccess: (outcome) => GuardedRemoteAgent.outcomeText(outcome)
 * }))
 * ```
 * @category errors
 * @since 0.1.0
 */
export type GuardError = guard.GuardError

/**
 * The prefix a text starts with, if any.
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent } from "effect-a2a"
 * GuardedRemoteAgent.markerOf("REMOTE_FAILED Agent execution failed. (error_id: 3f9c0a7b12de)") // Option.some("REMOTE_FAILED")
 * ```
 * @category markers
 * @since 0.1.0
 */
export const markerOf: (text: string) => Option.Option<Marker> = guard.markerOf

/**
 * The text of a remote outcome. `completed` formats a completed task (by
 * default its status text and data parts, then each artifact's text and
 * data parts, data as compact JSON cut at 2,000 characters a part).
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent, RemoteOutcome } from "effect-a2a"
 * declare const outcome: RemoteOutcome.RemoteOutcome
 * const text = GuardedRemoteAgent.outcomeText(outcome)
 * ```
 * @category texts
 * @since 0.1.0
 */
export const outcomeText: (
  outcome: RemoteOutcome.RemoteOutcome,
  completed?: (outcome: RemoteOutcome.Completed) => string
) => string = guard.outcomeText

/**
 * The text of a failed call.
 *
 * @example
 * ```ts
 * import { A2AClientError, GuardedRemoteAgent } from "effect-a2a"
 *
 * GuardedRemoteAgent.errorText(new A2AClientError.A2AClientError({
 *   agent: "booking", operation: "SendMessage", reason: "ConnectionRefused", delivery: "NotSent", detail: ""
 * }))
 * // "REMOTE_UNAVAILABLE: the request was not submitted (booking: the connection was refused)"
 * ```
 * @category texts
 * @since 0.1.0
 */
export const errorText: (error: GuardError) => string = guard.errorText

/**
 * How a remote agent is guarded: its description, its breaker, its retry policy and the text of a completed task.
 *
 * @example
 * ```ts
 * import { GuardedRemoteAgent, Part, RemoteAgent } from "effect-a2a"
 *
 * declare const remote: RemoteAgent.RemoteAgent
 * const options: GuardedRemoteAgent.Options = {
 *   description: "Books flights: give the flight number and the passenger's name",
 *   retry: { maxAttempts: 3, retryFailed: true },
 *   completedText: (outcome) => outcome.artifacts.map((artifact) => Part.textOf(artifact.parts)).join("\n")
 * }
 * const booking = GuardedRemoteAgent.make(remote, options)
 * ```
 * @category options
 * @since 0.1.0
 */
export interface Options {
  /** Offered to a parent model; by default the card's description. */
  readonly description?: string | undefined
  /** Rejects calls at once while the remote keeps failing. */
  readonly breaker?: CircuitBreaker.CircuitBreaker | undefined
  /**
   * The retry policy, applied inside the breaker: `RetryPolicy` options, or
   * a function of the call. Either way it is told per call whether the call
   * is safe to resend: only a `send` with an idempotency key is (`run`
   * streams without one), and a message to an existing task never resends a
   * FAILED one. For `run`, a retried attempt reports its progress again.
   */
  readonly retry?:
    | RetryPolicy.Options
    | ((
      call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>,
      request: RetryPolicy.Request
    ) => Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>)
    | undefined
  /** Formats a completed task; a throw is a defect, never text. */
  readonly completedText?: ((outcome: RemoteOutcome.Completed) => string) | undefined
}

/**
 * A guarded remote agent: an {@link Agent.Agent} that never fails, plus a
 * blocking `send`.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { GuardedRemoteAgent } from "effect-a2a"
 *
 * declare const booking: GuardedRemoteAgent.GuardedRemoteAgent
 * // blocking, with an idempotency key: an Agent.Result, never a failure
 * const result = booking.send("book flight 4821 for Ana", { idempotencyKey: "order-17" })
 * // as an Agent: progress events, then the result
 * const events = Stream.runCollect(booking.run("book flight 4821 for Ana"))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface GuardedRemoteAgent extends Agent.Agent {
  readonly remote: RemoteAgent.RemoteAgent
  /** Sends a message and waits for its ending, as a {@link Agent.Result}. */
  readonly send: (input: RemoteAgent.Input, options?: RemoteAgent.CallOptions) => Effect.Effect<Agent.Result>
}

/**
 * Guards a remote agent.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { CircuitBreaker, GuardedRemoteAgent, RemoteAgent, RetryPolicy } from "effect-a2a"
 *
 * const program = Effect.gen(function*() {
 *   const remote = yield* RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000", onCardFailure: "degrade" })
 *   const breaker = yield* CircuitBreaker.make("booking", { trip: CircuitBreaker.consecutiveFailures(3) })
 *   // Retry inside the breaker, only what is safe to resend (see RetryPolicy).
 *   const booking = GuardedRemoteAgent.make(remote, { breaker, retry: { maxAttempts: 3 } })
 *   const result = yield* booking.send("book flight 4821 for Ana")
 *   return result.text // "REMOTE_FAILED Agent execution failed. (error_id: 3f9c0a7b12de)", ...
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make: (remote: RemoteAgent.RemoteAgent, options?: Options) => GuardedRemoteAgent = internal.make

/**
 * Guards a remote agent with its breaker from the `CircuitBreaker.Registry`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { CircuitBreaker, GuardedRemoteAgent, RemoteAgent } from "effect-a2a"
 *
 * const program = Effect.gen(function*() {
 *   const remote = yield* RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" })
 *   return yield* GuardedRemoteAgent.withBreaker(remote)
 * }).pipe(Effect.provide(CircuitBreaker.layer({ trip: CircuitBreaker.consecutiveFailures(3) })))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const withBreaker: (
  remote: RemoteAgent.RemoteAgent,
  options?: Omit<Options, "breaker">
) => Effect.Effect<GuardedRemoteAgent, never, CircuitBreaker.Registry> = internal.withBreaker
