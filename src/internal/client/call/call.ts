/**
 * One client operation as one asynchronous step: its span, its requests (a
 * blocking send may poll), the conversion of the answer, the outcome metric
 * and the log line. It runs on every call, and on a busy process each Effect
 * step around a call costs more than the work it wraps, so the operation is
 * written with callbacks inside a single `Effect.async`: the span starts when
 * it is registered and ends where it settles or is interrupted, with nothing
 * in between that could skip the end.
 *
 * @internal
 */
import type { RequestOptions } from "@a2a-js/sdk/client"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"
import type * as Metric from "effect/Metric"
import * as MetricKey from "effect/MetricKey"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Tracer from "effect/Tracer"
import * as A2AClientError from "../../../A2AClientError.js"
import type { CallOptions } from "../../../RemoteAgent.js"
import * as RemoteOutcome from "../../../RemoteOutcome.js"
import * as metrics from "../../observability/metrics.js"
import * as tracing from "../../observability/tracing.js"
import * as IdempotencyKey from "../../wire/idempotencyKey.js"
import { type Binding, type CallRecord, classifyCall } from "./classify.js"

/** The known ids of the task a request is about, for errors. @internal */
export interface Ids {
  readonly taskId?: string | undefined
  readonly contextId?: string | undefined
}

/**
 * How an operation is given up, shared by its requests: the `AbortSignal`
 * is made only when a request reads it (fetch takes one; gRPC cancels
 * through its interceptor), as Node's `AbortController` costs more than the
 * rest of a call's set-up.
 *
 * @internal
 */
export class Cancel {
  aborted = false
  reason: unknown = undefined
  private controller: AbortController | undefined
  constructor(
    readonly record: CallRecord,
    private readonly track: (signal: AbortSignal, record: CallRecord) => CallRecord
  ) {}
  private listener: (() => void) | undefined
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController()
      this.track(this.controller.signal, this.record)
      if (this.aborted) this.controller.abort(this.reason)
    }
    return this.controller.signal
  }
  /** Runs `listener` once, when the operation is given up; one at a time (a poll's wait), and no signal made for it. */
  onAbort(listener: (() => void) | undefined): void {
    this.listener = listener
  }
  abort(reason: unknown = new DOMException("This operation was aborted", "AbortError")): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.record.cancelled = true
    this.controller?.abort(reason)
    const listener = this.listener
    this.listener = undefined
    listener?.()
    this.record.inFlight?.cancel()
  }
}

/** One operation's requests share its cancel, record, headers and deadline. @internal */
export interface Exchange {
  readonly cancel: Cancel
  readonly record: CallRecord
  readonly headers: Record<string, string>
  /** When the operation's time is up, in `Date.now()` milliseconds. */
  readonly deadline: number
  readonly timeout: Duration.Duration
}

/** How an operation (or one of its requests) ended. @internal */
export type Done<B> = (result: Either.Either<B, A2AClientError.A2AClientError>) => void

/** A header's value as it is written into the request: the only place a `Redacted` one is opened. @internal */
export const headerText = (value: string | Redacted.Redacted): string =>
  typeof value === "string" ? value : Redacted.value(value)

/** `headers` as they are written into the request. @internal */
export const plainHeaders = (headers: Readonly<Record<string, string | Redacted.Redacted>>): Record<string, string> => {
  const plain: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) plain[name] = headerText(value)
  return plain
}

/**
 * The headers of one call, as the SDK's service parameters carry them (HTTP
 * headers, or gRPC metadata): the agent's static ones, `traceparent` for its
 * span, so the server's spans join the caller's trace, then the call's own
 * (with the agent's computed ones, when its headers are an Effect). Later
 * names win over earlier ones, compared without case, as the tracking fetch
 * and grpc-js's metadata both merge them.
 *
 * @internal
 */
export const callHeaders = (
  span: tracing.SpanIds | undefined,
  options: CallOptions | undefined,
  agentHeaders?: Readonly<Record<string, string>>
): Record<string, string> => {
  const headers: Record<string, string> = agentHeaders === undefined ? {} : { ...agentHeaders }
  if (span !== undefined) headers.traceparent = tracing.traceparent(span)
  if (options?.headers !== undefined) {
    for (const [name, value] of Object.entries(options.headers)) headers[name] = headerText(value)
  }
  // Last: the tracking fetch merges names without case, the later winning, so the key replaces an
  // `idempotency-key` given in the headers.
  if (options?.idempotencyKey !== undefined) headers[IdempotencyKey.headerName] = options.idempotencyKey
  return headers
}

/** `error` with the agent's transport, when it has none yet. @internal */
export const withTransport = (error: A2AClientError.A2AClientError, binding: Binding): A2AClientError.A2AClientError =>
  error.transport !== undefined ? error : new A2AClientError.A2AClientError({ ...error, transport: binding.transport })

/** An error of a call, with the task's ids when known. @internal */
export const callError = (
  agent: string,
  operation: A2AClientError.Operation,
  reason: A2AClientError.Reason,
  delivery: A2AClientError.Delivery,
  detail: string,
  ids: Ids
) =>
  new A2AClientError.A2AClientError({
    agent,
    operation,
    reason,
    delivery,
    detail,
    ...(ids.taskId ? { taskId: ids.taskId } : {}),
    ...(ids.contextId ? { contextId: ids.contextId } : {})
  })

/**
 * The fiber's span, or none with tracing off: `Effect.withSpan` then still
 * provides a placeholder span, whose ids ("noop") must not reach a
 * `traceparent` or a log line.
 *
 * @internal
 */
export const tracedSpan = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Tracer.AnySpan | undefined =>
  fiber.getFiberRef(FiberRef.currentTracerEnabled) ? fiber.currentSpan : undefined

/** A response that could not be used. @internal */
export const invalid = (agent: string, operation: A2AClientError.Operation, detail: string, ids: Ids) =>
  callError(agent, operation, "InvalidResponse", "Unknown", detail, ids)

/** A counter of one agent's calls. @internal */
export const counter = (
  name: string,
  agent: string,
  tags?: Readonly<Record<string, string>>
): Metric.Metric.Counter<number> => metrics.tagged(MetricKey.counter(name, { incremental: true }), { agent, ...tags })

const outcomeCounterNames: Record<RemoteOutcome.Tag, string> = {
  Completed: "a2a.remote_completed",
  Failed: "a2a.remote_failed",
  Canceled: "a2a.remote_canceled",
  Rejected: "a2a.remote_rejected",
  InputRequired: "a2a.remote_input_required",
  AuthRequired: "a2a.remote_auth_required"
}

/** Annotates logs with the trace id, so both sides of a hop can be found in one search. */
const withTraceId =
  (span: tracing.SpanIds | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    span === undefined ? effect : Effect.annotateLogs(effect, "traceId", span.traceId)

const timeoutError = () => new DOMException("The operation timed out", "TimeoutError")

/** How long a call waits, once its time is up, for its transport to stop before it ends anyway. */
const abortGraceMillis = 1000

/** The longest delay `setTimeout` takes (about 24.8 days); Node fires a longer one at once. @internal */
export const maxTimerMillis = 2 ** 31 - 1

const spanKind = "client" as const

type Report = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  span: tracing.SpanIds | Tracer.AnySpan | undefined,
  operation: A2AClientError.Operation,
  result: Either.Either<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
) => Effect.Effect<void> | undefined

const logged = (fiber: Fiber.RuntimeFiber<unknown, unknown>, level: LogLevel.LogLevel) =>
  level.ordinal >= fiber.getFiberRef(FiberRef.currentMinimumLogLevel).ordinal

/**
 * Counts how an operation ended and marks its span; the log line, when its
 * level is on, is returned to run in the fiber. What `Metric.update` does,
 * without its steps.
 */
const makeReport = (agent: string, errorLevel: LogLevel.LogLevel): Report => {
  const outcomeCounters = Object.fromEntries(
    Object.entries(outcomeCounterNames).map(([tag, name]) => [tag, counter(name, agent)])
  ) as Record<RemoteOutcome.Tag, ReturnType<typeof counter>>
  const errorCounters = Object.fromEntries(
    A2AClientError.Reason.literals.map((reason) => [reason, counter("a2a.client_error", agent, { reason })])
  ) as Record<A2AClientError.Reason, ReturnType<typeof counter>>
  return (fiber, span, operation, result) => {
    const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
    if (Either.isLeft(result)) {
      const error = result.left
      errorCounters[error.reason].unsafeUpdate(1, labels)
      if (!logged(fiber, errorLevel)) return undefined
      return Effect.logWithLevel(errorLevel, error.message).pipe(
        Effect.annotateLogs({
          agent,
          reason: error.reason,
          delivery: error.delivery,
          ...(error.transport === undefined ? {} : { transport: error.transport }),
          ...(error.taskId === undefined ? {} : { taskId: error.taskId }),
          ...(error.contextId === undefined ? {} : { contextId: error.contextId })
        }),
        withTraceId(span)
      )
    }
    const outcome = result.right
    if (outcome._tag === "Running") return undefined
    if (span !== undefined && "_tag" in span && span._tag === "Span") {
      span.attribute("a2a.task_id", outcome.taskId)
      span.attribute("a2a.outcome", outcome._tag)
    }
    outcomeCounters[outcome._tag].unsafeUpdate(1, labels)
    // An outcome is the call's answer, a FAILED one too: the caller acts on it, and the log stays quiet.
    if (!logged(fiber, LogLevel.Debug)) return undefined
    const errorId = Option.getOrUndefined(RemoteOutcome.errorIdOf(outcome))
    return Effect.logDebug(`remote agent ${agent}: ${operation} ended ${outcome._tag}`).pipe(
      Effect.annotateLogs({
        agent,
        outcome: outcome._tag,
        taskId: outcome.taskId,
        contextId: outcome.contextId,
        ...(errorId === undefined ? {} : { errorId })
      }),
      withTraceId(span)
    )
  }
}

/**
 * One request of an exchange. `done` gets the decoded answer or the
 * classified error, exactly once; a throw while decoding becomes a typed
 * `InvalidResponse` (it would otherwise be lost in the promise chain and
 * leave the call hanging).
 */
const makeRequest = (agent: string, binding: Binding) =>
<A, B>(
  exchange: Exchange,
  operation: A2AClientError.Operation,
  ids: Ids,
  run: (options: RequestOptions) => Promise<A>,
  decode: (response: A) => Either.Either<B, A2AClientError.A2AClientError>,
  done: Done<B>
): void => {
  const parameters = binding.parameters(exchange.record, exchange.headers)
  const fail = (error: unknown) => {
    binding.release?.(parameters)
    done(
      Either.left(
        classifyCall(error, {
          agent,
          binding,
          signal: exchange.cancel,
          operation,
          record: exchange.record,
          streamStarted: false,
          ...ids
        })
      )
    )
  }
  try {
    run(
      binding.cancelsByRecord
        ? { serviceParameters: parameters }
        : { signal: exchange.cancel.signal, serviceParameters: parameters }
    ).then((response) => {
      binding.release?.(parameters)
      let decoded: Either.Either<B, A2AClientError.A2AClientError>
      try {
        decoded = decode(response)
      } catch (error) {
        decoded = Either.left(invalid(agent, operation, `the response could not be converted: ${String(error)}`, ids))
      }
      done(decoded)
    }, fail)
  } catch (error) {
    fail(error)
  }
}

/**
 * Runs one operation: `start` sends its requests on the exchange and calls
 * `done` once. The exchange's cancel fires on interruption and when the
 * operation's time is up. With `observed` off (a stream recovering its
 * task's state) the operation makes no span and counts nothing: the stream
 * does both.
 */
const makeOperate = (
  agent: string,
  track: (signal: AbortSignal, record: CallRecord) => CallRecord,
  defaultTimeout: Duration.Duration,
  report: Report,
  binding: Binding,
  agentHeaders: Readonly<Record<string, string>> | undefined
) => {
  const spanAttributes = { "a2a.agent": agent, "a2a.transport": binding.transport }
  return <B extends RemoteOutcome.TaskView>(
    operation: A2AClientError.Operation,
    options: CallOptions | undefined,
    start: (exchange: Exchange, done: Done<B>) => void,
    observed = true
  ): Effect.Effect<B, A2AClientError.A2AClientError> =>
    Effect.withFiberRuntime((fiber) => {
      // Set when the call starts; run when it ends in a failure, interruption included.
      let cancel: ((cause: Cause.Cause<A2AClientError.A2AClientError>) => void) | undefined
      const call = Effect.async<B, A2AClientError.A2AClientError>((resume) => {
        const tracer = fiber.currentTracer
        // A real span only when spans go somewhere; otherwise its ids carry the trace to the server.
        const settings = observed && tracing.exportsSpans(tracer)
          ? tracing.spanSettings(
            (ref) => fiber.getFiberRef(ref),
            tracer,
            Context.get(fiber.currentDefaultServices, Clock.Clock)
          )
          : undefined
        // With tracing off no ids leave the call: the fiber's span is then a placeholder.
        const enabled = fiber.getFiberRef(FiberRef.currentTracerEnabled)
        const parent = enabled ? fiber.currentSpan : undefined
        const span = settings && tracing.startSpan(
          settings,
          `RemoteAgent.${operation}`,
          tracing.propagatedParent(parent),
          spanKind,
          spanAttributes
        )
        const ids: tracing.SpanIds | undefined = !enabled
          ? undefined
          : !observed
          ? parent
          : settings !== undefined
          ? span
          : tracing.childIds(tracing.propagatedParent(parent))
        const timeout = Duration.decode(options?.timeout ?? defaultTimeout)
        const millis = Duration.toMillis(timeout)
        const record: CallRecord = { sent: false }
        const abort = new Cancel(record, track)
        // A transport that does not stop when asked (a user's client that ignores interruption, an SDK call
        // that never settles) still ends the call, a moment after its time; the transport learns nothing of it.
        const giveUp = () =>
          done(Either.left(callError(
            agent,
            operation,
            "Timeout",
            record.sent ? "Unknown" : "NotSent",
            `no answer within ${Duration.format(timeout)}, and the transport did not stop when asked`,
            {}
          )))
        const expire = () => {
          abort.abort(timeoutError())
          timer = setTimeout(giveUp, abortGraceMillis)
        }
        const deadline = Date.now() + millis
        // Node fires a longer timer at once, so a long deadline is reached in steps; an infinite one has none.
        const arm = (): ReturnType<typeof setTimeout> | undefined => {
          const left = deadline - Date.now()
          return left > maxTimerMillis ? setTimeout(() => (timer = arm()), maxTimerMillis) : setTimeout(expire, left)
        }
        let timer = millis <= maxTimerMillis ? setTimeout(expire, millis) : Number.isFinite(millis) ? arm() : undefined
        let open = true
        const close = (exit: Exit.Exit<B, A2AClientError.A2AClientError>): void => {
          open = false
          clearTimeout(timer)
          if (span !== undefined && settings) tracing.endSpan(settings, span, exit)
        }
        const done: Done<B> = (answer) => {
          if (!open) return
          // Errors made here rather than classified (a time-out while polling, a bad answer) learn the transport now.
          const result = Either.isLeft(answer) && answer.left.transport === undefined
            ? Either.left(withTransport(answer.left, binding))
            : answer
          const exit: Exit.Exit<B, A2AClientError.A2AClientError> = Either.isRight(result)
            ? Exit.succeed(result.right)
            : Exit.fail(result.left)
          const log = observed ? report(fiber, span ?? ids, operation, result) : undefined
          close(exit)
          resume(log === undefined ? exit : Effect.zipRight(log, exit))
        }
        // Closed before aborting: what the abort sets off must find the call ended.
        cancel = (cause) => {
          if (!open) return
          close(Exit.failCause(cause))
          abort.abort()
        }
        try {
          start({
            cancel: abort,
            record,
            headers: callHeaders(ids, options, agentHeaders),
            deadline,
            timeout
          }, done)
        } catch (defect) {
          if (open) {
            cancel(Cause.die(defect))
            resume(Exit.die(defect))
          }
        }
      })
      // The canceler of an `Effect.async` costs more steps than this on every call, a success included.
      return Effect.uninterruptibleMask((restore) =>
        Effect.catchAllCause(restore(call), (cause) => {
          cancel?.(cause)
          return Effect.failCause(cause)
        })
      )
    })
}

/**
 * The calls of one agent, with their metrics per channel, log annotations
 * and spans. Built once per agent.
 *
 * @internal
 */
export const make = (
  agent: string,
  track: (signal: AbortSignal, record: CallRecord) => CallRecord,
  defaultTimeout: Duration.Duration,
  binding: Binding,
  agentHeaders: Readonly<Record<string, string>> | undefined,
  errorLevel: LogLevel.LogLevel = LogLevel.Debug
) => {
  const report = makeReport(agent, errorLevel)
  /**
   * Records how a stream ended, in the stream's span.
   */
  const reportStream = (
    operation: A2AClientError.Operation,
    result: Either.Either<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
  ): Effect.Effect<void> =>
    Effect.withFiberRuntime((fiber) => report(fiber, tracedSpan(fiber), operation, result) ?? Effect.void)
  return {
    operate: makeOperate(agent, track, defaultTimeout, report, binding, agentHeaders),
    request: makeRequest(agent, binding),
    reportStream,
    binding,
    agentHeaders
  }
}

/** The calls of one agent. @internal */
export type Engine = ReturnType<typeof make>
