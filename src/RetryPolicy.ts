/**
 * Safe retries for calls to remote agents.
 *
 * A transport error before a task id came back may mean the request never
 * arrived, or that it arrived and the answer was lost. So a call is resent
 * only when that is safe:
 *
 * - `delivery: "NotSent"` errors (the request provably never left);
 * - a transient `delivery: "Refused"`, after the server's `Retry-After`:
 *   HTTP 429, or a 503 that refuses (a server shutting down), since nothing
 *   ran;
 * - `delivery: "Unknown"` errors when the request carries an idempotency key,
 *   which lets the server recognise a repeat; so a bare 5xx (503 included),
 *   which a proxy may answer after the server got the request, needs a key.
 *
 * It never resends after any other refusal (such as the
 * `UnsupportedOperation` of a task in a terminal state, or a 404): it would
 * be refused again. A FAILED task is
 * terminal too: with `retryFailed`, a FAILED outcome whose hint says
 * `retryable=true` is retried as a new task, which is only safe when the
 * agent's side effects use tool-level idempotency keys.
 *
 * A stream (`RemoteAgent.stream`, `resubscribe`) is resent by
 * {@link retryStream} under the same rules, only while it has yielded no
 * event.
 *
 * Delays grow exponentially with decorrelated jitter, within a maximum number
 * of attempts and a total time budget. Giving up returns the last typed
 * error, with its `attempts`; its `delivery` is `"Unknown"` when any attempt
 * may have been acted on, even if the last one was never sent or refused.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Schedule from "effect/Schedule"
import type * as Stream from "effect/Stream"
import type * as A2AClientError from "./A2AClientError.js"
import * as internal from "./internal/client/resilience/retryPolicy.js"
import type * as RemoteEvent from "./RemoteEvent.js"
import type * as RemoteOutcome from "./RemoteOutcome.js"

/**
 * How hard {@link retry} tries: attempts, delays, a time budget, and whether
 * a retryable FAILED outcome is tried again.
 *
 * @example
 * ```ts
 * import { RemoteAgent, RetryPolicy } from "effect-a2a"
 *
 * const patient: RetryPolicy.Options = { maxAttempts: 6, base: "200 millis", cap: "10 seconds", budget: "1 minute" }
 * const book = (agent: RemoteAgent.RemoteAgent, key: string) =>
 *   agent.send("book flight 4821", { idempotencyKey: key }).pipe(RetryPolicy.retry(patient, { idempotent: true }))
 * ```
 * @category options
 * @since 0.1.0
 */
export interface Options {
  /** Attempts in all, the first included. Default 4. */
  readonly maxAttempts?: number | undefined
  /** The first delay. Default 100 ms. */
  readonly base?: Duration.DurationInput | undefined
  /** The longest delay. Default 5 seconds. */
  readonly cap?: Duration.DurationInput | undefined
  /** No attempt starts after this much time since the first. Default 30 seconds. */
  readonly budget?: Duration.DurationInput | undefined
  /**
   * Retry FAILED outcomes whose hint says `retryable=true`, as new tasks.
   * Default false. A retry must be a new request: under the request-level
   * idempotency key of the FAILED one, the server would answer that task
   * again. So a `RemoteAgent.send` with a key, retried after a FAILED
   * outcome, is sent under a key derived from its own and the failed task's
   * id: a new task, whose repeats still find it. The side effects'
   * tool-level keys keep the new task safe.
   */
  readonly retryFailed?: boolean | undefined
}

/**
 * How hard {@link retryStream} tries: {@link Options} without `retryFailed`,
 * since a stream's `Finished` event, a FAILED outcome included, is never
 * resent.
 *
 * @example
 * ```ts
 * import { RetryPolicy } from "effect-a2a"
 *
 * const patient: RetryPolicy.StreamOptions = { maxAttempts: 6, base: "200 millis", budget: "1 minute" }
 * ```
 * @category options
 * @since 0.1.0
 */
export type StreamOptions = Omit<Options, "retryFailed">

/**
 * What the policy knows of the request.
 *
 * @example
 * ```ts
 * import { Part, RemoteAgent, RetryPolicy } from "effect-a2a"
 *
 * // an answer within an existing task, without an idempotency key
 * const request: RetryPolicy.Request = { idempotent: false, continuesTask: true }
 * const reply = (agent: RemoteAgent.RemoteAgent, taskId: string) =>
 *   agent.send({ parts: [Part.TextPart.make({ text: "yes" })], taskId }).pipe(RetryPolicy.retry({ retryFailed: true }, request))
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Request {
  /** The request carries an idempotency key, so a repeat is recognised. */
  readonly idempotent: boolean
  /** The request continues an existing task; a FAILED one is never resent to. */
  readonly continuesTask?: boolean | undefined
}

/**
 * Why an input may be retried, or none when it must not be.
 *
 * @example
 * ```ts
 * import { A2AClientError, RetryPolicy } from "effect-a2a"
 *
 * const refused = new A2AClientError.A2AClientError({
 *   agent: "booking", operation: "SendMessage", reason: "ConnectionRefused", delivery: "NotSent", detail: "connect ECONNREFUSED"
 * })
 * RetryPolicy.retryReason(refused, { idempotent: false }) // Option.some("ConnectionRefused")
 * ```
 * @category utils
 * @since 0.1.0
 */
export const retryReason: (error: A2AClientError.A2AClientError, request: Request) => Option.Option<string> =
  internal.retryReason

/**
 * The delays between attempts: exponential backoff with decorrelated jitter
 * (each delay drawn between `base` and three times the previous one, capped),
 * at least the input's `Retry-After`, and none once the attempts or the time
 * budget would be exceeded.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { A2AClientError, RemoteOutcome, RetryPolicy } from "effect-a2a"
 *
 * declare const call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>
 * const retried = Effect.retry(call, {
 *   schedule: RetryPolicy.schedule({ maxAttempts: 3 }),
 *   while: (error) => Option.isSome(RetryPolicy.retryReason(error, { idempotent: true }))
 * })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const schedule: (options?: Options, startedAt?: number) => Schedule.Schedule<Duration.Duration, internal.Input> =
  internal.schedule

/**
 * Applies the policy to a call.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { RemoteAgent, RetryPolicy } from "effect-a2a"
 *
 * const book = (agent: RemoteAgent.RemoteAgent, key: string) =>
 *   agent.send("book flight 4821", { idempotencyKey: key }).pipe(
 *     RetryPolicy.retry({ maxAttempts: 4, budget: "20 seconds" }, { idempotent: true })
 *   )
 * // or data-first
 * const same = (agent: RemoteAgent.RemoteAgent, key: string) =>
 *   RetryPolicy.retry(agent.send("book flight 4821", { idempotencyKey: key }), { maxAttempts: 4 }, { idempotent: true })
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const retry: {
  (options: Options, request: Request): <R>(
    call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R>
  ) => Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R>
  <R>(
    call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R>,
    options: Options,
    request: Request
  ): Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R>
} = internal.retry

/**
 * Applies the policy to a stream of a task's events: the stream is opened
 * again (the request resent) only when it failed before its first event,
 * under the rules of {@link retry}, with the same delays, `Retry-After` and
 * Debug log line. Once an event has come, the task exists and the caller has
 * seen part of it: any later failure passes through unchanged, and a
 * `Finished` event is the end, whatever its outcome.
 *
 * @example
 * ```ts
 * import { Stream } from "effect"
 * import { RemoteAgent, RetryPolicy } from "effect-a2a"
 *
 * const progress = (agent: RemoteAgent.RemoteAgent, key: string) =>
 *   agent.stream("book flight 4821", { idempotencyKey: key }).pipe(
 *     RetryPolicy.retryStream({ maxAttempts: 4, budget: "20 seconds" }, { idempotent: true }),
 *     Stream.runCollect
 *   )
 * // or data-first
 * const same = (agent: RemoteAgent.RemoteAgent) =>
 *   RetryPolicy.retryStream(agent.stream("book flight 4821"), { maxAttempts: 4 }, { idempotent: false })
 * ```
 * @category combinators
 * @since 0.1.0
 */
export const retryStream: {
  (options: StreamOptions, request: Request): <R>(
    stream: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError, R>
  ) => Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError, R>
  <R>(
    stream: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError, R>,
    options: StreamOptions,
    request: Request
  ): Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError, R>
} = internal.retryStream
