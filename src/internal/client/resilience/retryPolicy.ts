/**
 * The code behind `RetryPolicy`: when an attempt may be resent, the delays
 * between attempts, and the loop that keeps the last typed error honest about
 * delivery.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleInterval from "effect/ScheduleInterval"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as A2AClientError from "../../../A2AClientError.js"
import type * as RemoteEvent from "../../../RemoteEvent.js"
import * as RemoteOutcome from "../../../RemoteOutcome.js"
import type * as RetryPolicy from "../../../RetryPolicy.js"
import type { Options, Request, StreamOptions } from "../../../RetryPolicy.js"
import { answerStatus, statusName } from "../call/answerStatus.js"
import { retryOfFailed } from "../call/input.js"

/** A FAILED outcome the caller chose to retry, carried through the schedule as an input. */
class RetryableFailure extends Schema.TaggedError<RetryableFailure>()("RetryableFailure", {
  outcome: RemoteOutcome.Failed
}) {}

/** @internal */
export type Input = A2AClientError.A2AClientError | RetryableFailure

/** @internal */
export const retryReason = (error: A2AClientError.A2AClientError, request: Request): Option.Option<string> => {
  if (error.reason === "Unavailable" || error.reason === "InvalidRequest") return Option.none()
  // gRPC's RESOURCE_EXHAUSTED reads as 429, UNAVAILABLE as 503, UNKNOWN and INTERNAL as 500.
  const status = answerStatus(error)
  // Nothing ran: a transient refusal (429, or a server shutting down with 503) goes again after its Retry-After,
  // key or not; any other refusal would only be refused again.
  if (error.delivery === "Refused") {
    return status === 429 || status === 503
      ? Option.some(statusName(error, status))
      : Option.none()
  }
  // A 5xx may come after the server acted (a proxy's, or an SDK server's 500 with a JSON-RPC error): only a request
  // the server deduplicates may go again.
  if (request.idempotent && status !== undefined && status >= 500) return Option.some(statusName(error, status))
  if (error.reason === "ProtocolError" || error.reason === "HttpStatus") return Option.none()
  if (error.delivery === "NotSent" || request.idempotent) return Option.some(error.reason)
  return Option.none()
}

const retryCounter = Metric.counter("a2a.retry", { incremental: true })

/** @internal */
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
 * The attempts of one run of the policy: why the last failed one may be
 * retried, the schedule that decides and logs it, and the error given up
 * with. Shared by `retry` and `retryStream`, so both resend and log alike.
 */
const attemptsOf = (options: Options, request: Request) => {
  let attempts = 0
  // Whether an attempt may have been acted on: then the last error can say neither NotSent nor Refused.
  let reached = false
  // Why the last failed attempt may be retried, and whose it was; none when it may not.
  let retrying: { readonly reason: string; readonly agent: string } | undefined
  const reasonOf = (input: Input): Option.Option<string> =>
    input._tag === "RetryableFailure" ? Option.some("Failed") : retryReason(input, request)
  /** Notes an attempt's failure; `final` when nothing may follow it whatever its reason. */
  const failed = (input: Input, final = false) => {
    if (input._tag === "RetryableFailure" || input.delivery === "Unknown") reached = true
    retrying = final ? undefined : Option.getOrUndefined(Option.map(reasonOf(input), (reason) => ({
      reason,
      agent: input._tag === "RetryableFailure" ? input.outcome.agent : input.agent
    })))
  }
  // Logged and counted once the schedule goes on: the attempt it gives up after is not retried.
  const announce = (delay: Duration.Duration, decision: ScheduleDecision.ScheduleDecision) => {
    if (ScheduleDecision.isDone(decision) || retrying === undefined) return Effect.void
    const { agent, reason } = retrying
    // Whole milliseconds: "143ms", not the nanoseconds of a jittered delay.
    const wait = Duration.format(Duration.millis(Math.round(Duration.toMillis(delay))))
    return Effect.logDebug(`attempt ${attempts} failed (${reason}); retrying in ${wait}`).pipe(
      Effect.zipRight(
        Metric.update(retryCounter.pipe(Metric.tagged("reason", reason), Metric.tagged("agent", agent)), 1)
      ),
      Effect.annotateLogs({ attempt: attempts, reason })
    )
  }
  return {
    started: () => void attempts++,
    failed,
    /** The schedule of this run; the budget counts from `startedAt`, the first attempt's start. */
    schedule: (startedAt: number) =>
      schedule(options, startedAt).pipe(
        // Decided for this input just before, where its reason was noted.
        Schedule.whileInput(() => retrying !== undefined),
        Schedule.onDecision(announce)
      ),
    giveUp: (error: A2AClientError.A2AClientError) =>
      new A2AClientError.A2AClientError(
        reached && error.delivery !== "Unknown"
          ? {
            ...error,
            attempts,
            delivery: "Unknown",
            detail: `${error.detail} (an earlier attempt may have been received)`
          }
          : { ...error, attempts }
      )
  }
}

/** @internal */
export const retry: typeof RetryPolicy.retry = dual(3, <R>(
  call: Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R>,
  options: Options,
  request: Request
): Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError, R> =>
  Effect.suspend(() => {
    const tries = attemptsOf(options, request)
    // The FAILED task the next attempt retries, if any: a keyed send then makes a new task (see `keyFor`).
    let failedTaskId: string | undefined
    const attempt = Effect.suspend(() => {
      tries.started()
      return failedTaskId === undefined ? call : Effect.locally(call, retryOfFailed, failedTaskId)
    }).pipe(
      Effect.flatMap((outcome): Effect.Effect<RemoteOutcome.RemoteOutcome, Input> =>
        options.retryFailed === true && request.continuesTask !== true && outcome._tag === "Failed" &&
          Option.exists(outcome.hint, (hint) => hint.retryable)
          ? Effect.fail(new RetryableFailure({ outcome }))
          : Effect.succeed(outcome)
      ),
      Effect.tapError((input) =>
        Effect.sync(() => {
          if (input._tag === "RetryableFailure") failedTaskId = input.outcome.taskId
          tries.failed(input)
        })
      )
    )
    // The budget counts from the first attempt, its own time-out included.
    return Clock.currentTimeMillis.pipe(
      Effect.flatMap((startedAt) => Effect.retry(attempt, tries.schedule(startedAt))),
      Effect.catchAll((input) =>
        input._tag === "RetryableFailure"
          ? Effect.succeed<RemoteOutcome.RemoteOutcome>(input.outcome)
          : Effect.fail(tries.giveUp(input))
      )
    )
  }))

/** @internal */
export const retryStream: typeof RetryPolicy.retryStream = dual(3, <R>(
  stream: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError, R>,
  options: StreamOptions,
  request: Request
): Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError, R> =>
  Stream.suspend(() => {
    const tries = attemptsOf(options, request)
    // Once an event came, the task exists and the caller has acted on part of it: a resend would be another.
    let emitted = false
    const attempt = Stream.suspend(() => {
      tries.started()
      return stream
    }).pipe(
      Stream.mapChunks((events) => {
        if (events.length > 0) emitted = true
        return events
      }),
      Stream.tapError((error) => Effect.sync(() => tries.failed(error, emitted)))
    )
    return Stream.unwrap(Effect.map(Clock.currentTimeMillis, (startedAt) =>
      attempt.pipe(
        Stream.retry(tries.schedule(startedAt)),
        Stream.catchAll((error) => Stream.fail(emitted ? error : tries.giveUp(error)))
      )))
  }))
