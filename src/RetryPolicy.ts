/**
 * Safe retries for calls to remote agents.
 *
 * A transport error before a task id came back may mean the request never
 * arrived, or that it arrived and the answer was lost. So a call is resent
 * only when that is safe:
 *
 * - `delivery: "NotSent"` errors (the request provably never left);
 * - `delivery: "Unknown"` errors when the request carries an idempotency key,
 *   which lets the server recognise a repeat;
 * - HTTP 429 and 503, after the server's `Retry-After`.
 *
 * It never resends after a definite answer (a JSON-RPC error, such as the
 * `UnsupportedOperation` of a task in a terminal state). A FAILED task is
 * terminal too: with `retryFailed`, a FAILED outcome whose hint says
 * `retryable=true` is retried as a new task, which is only safe when the
 * agent's side effects use tool-level idempotency keys.
 *
 * Delays grow exponentially with decorrelated jitter, within a maximum number
 * of attempts and a total time budget. Giving up returns the last typed
 * error, with its `attempts`; its `delivery` is `"Unknown"` when any attempt
 * may have reached the agent, even if the last one was never sent.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Metric, Option, Random, Schedule, Schema } from "effect"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleInterval from "effect/ScheduleInterval"
import * as A2AClientError from "./A2AClientError.js"
import * as RemoteOutcome from "./RemoteOutcome.js"

/**
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
   * Default false. A retry must be a new request: with a request-level
   * idempotency key, the server would answer the same FAILED task again, so
   * give each attempt its own key (the side effects' tool-level keys keep
   * the new task safe).
   */
  readonly retryFailed?: boolean | undefined
}

/**
 * What the policy knows of the request.
 *
 * @since 0.1.0
 */
export interface Request {
  /** The request carries an idempotency key, so a repeat is recognised. */
  readonly idempotent: boolean
  /** The request continues an existing task; a FAILED one is never resent to. */
  readonly continuesTask?: boolean | undefined
}

/** A FAILED outcome the caller chose to retry, carried through the schedule as an input. */
class RetryableFailure extends Schema.TaggedError<RetryableFailure>()("RetryableFailure", {
  outcome: RemoteOutcome.Failed
}) {}

type Input = A2AClientError.A2AClientError | RetryableFailure

/**
 * Why an input may be retried, or none when it must not be.
 *
 * @since 0.1.0
 */
export const retryReason = (error: A2AClientError.A2AClientError, request: Request): Option.Option<string> => {
  if (error.reason === "Unavailable" || error.reason === "ProtocolError" || error.reason === "InvalidRequest") {
    return Option.none()
  }
  if (error.reason === "HttpStatus" && (error.status === 429 || error.status === 503)) {
    return Option.some(`HttpStatus ${error.status}`)
  }
  if (error.delivery === "NotSent") return Option.some(error.reason)
  if (request.idempotent && error.reason !== "HttpStatus") return Option.some(error.reason)
  if (request.idempotent && error.status !== undefined && error.status >= 500) return Option.some(`HttpStatus ${error.status}`)
  return Option.none()
}

const retryCounter = Metric.counter("a2a.retry", { incremental: true })

/**
 * The delays between attempts: exponential backoff with decorrelated jitter
 * (each delay drawn between `base` and three times the previous one, capped),
 * at least the input's `Retry-After`, and none once the attempts or the time
 * budget would be exceeded.
 *
 * @since 0.1.0
 */
export const schedule = (options: Options = {}, startedAt?: number): Schedule.Schedule<Duration.Duration, Input> => {
  const maxAttempts = options.maxAttempts ?? 4
  const base = Duration.toMillis(options.base ?? Duration.millis(100))
  const cap = Duration.toMillis(options.cap ?? Duration.seconds(5))
  const budget = Duration.toMillis(options.budget ?? Duration.seconds(30))
  return Schedule.makeWithState(
    { retries: 0, previous: base, started: Option.fromNullable(startedAt) },
    (now, input: Input, state) =>
      Effect.gen(function*() {
        const started = Option.getOrElse(state.started, () => now)
        const jittered = yield* Random.nextRange(base, Math.max(base, state.previous * 3))
        const retryAfter = input._tag === "A2AClientError" && input.retryAfter ? Duration.toMillis(input.retryAfter) : 0
        const delay = Math.max(Math.min(cap, jittered), retryAfter)
        const next = { retries: state.retries + 1, previous: Math.min(cap, jittered), started: Option.some(started) }
        const out = Duration.millis(delay)
        if (state.retries + 1 >= maxAttempts || now + delay - started > budget) {
          return [next, out, ScheduleDecision.done] as const
        }
        return [next, out, ScheduleDecision.continueWith(ScheduleInterval.after(now + delay))] as const
      })
  )
}

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
 * ```
 * @since 0.1.0
 */
export const retry = (options: Options, request: Request) =>
<R>(
  call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R>
): Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R> =>
  Effect.suspend(() => {
    let attempts = 0
    // Whether an attempt may have reached the agent: then the last error cannot say NotSent.
    let reached = false
    const reasonOf = (input: Input): Option.Option<string> =>
      input._tag === "RetryableFailure" ? Option.some("Failed") : retryReason(input, request)
    const attempt = Effect.suspend(() => {
      attempts++
      return call
    }).pipe(
      Effect.flatMap((outcome): Effect.Effect<RemoteOutcome.RemoteOutcome, Input> =>
        options.retryFailed === true && request.continuesTask !== true && outcome._tag === "Failed" &&
          Option.exists(outcome.hint, (hint) => hint.retryable)
          ? Effect.fail(new RetryableFailure({ outcome }))
          : Effect.succeed(outcome)
      ),
      Effect.tapError((input) => {
        if (input._tag === "RetryableFailure" || input.delivery === "Unknown") reached = true
        return Option.match(reasonOf(input), {
          onNone: () => Effect.void,
          onSome: (reason) =>
            Effect.logInfo(`attempt ${attempts} failed (${reason}); retrying when the policy allows`).pipe(
              Effect.zipRight(
                Metric.update(
                  retryCounter.pipe(
                    Metric.tagged("reason", reason),
                    Metric.tagged("agent", input._tag === "RetryableFailure" ? input.outcome.agent : input.agent)
                  ),
                  1
                )
              ),
              Effect.annotateLogs({ attempt: attempts, reason })
            )
        })
      })
    )
    // The budget counts from the first attempt, its own time-out included.
    return Clock.currentTimeMillis.pipe(
      Effect.flatMap((startedAt) =>
        Effect.retry(attempt, { schedule: schedule(options, startedAt), while: (input) => Option.isSome(reasonOf(input)) })
      ),
      Effect.catchAll((input) =>
        input._tag === "RetryableFailure"
          ? Effect.succeed<RemoteOutcome.RemoteOutcome>(input.outcome)
          : Effect.fail(
            new A2AClientError.A2AClientError(
              reached && input.delivery === "NotSent"
                ? { ...input, attempts, delivery: "Unknown", detail: `${input.detail} (an earlier attempt may have been received)` }
                : { ...input, attempts }
            )
          )
      )
    )
  })
