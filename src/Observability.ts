/**
 * What an on-call engineer needs to follow a call across the A2A boundary:
 * the server's metrics, a JSON log layer, and the trace id as a log
 * annotation.
 *
 * Log annotations on both sides: `taskId`, `contextId`, `traceId`, and
 * `errorId` on failures. A run on the server is one span,
 * `A2AServer.execute`, joined to the caller's trace through the incoming
 * `traceparent` header; its attributes are `a2a.task_id`, `a2a.context_id`,
 * `a2a.agent`, `a2a.task_state` (or `a2a.reply: "message"` for a run
 * answered with a bare message) and, on a failure, `a2a.error_id` (the
 * cause itself stays in the log). With Effect's default tracer, whose spans
 * go nowhere, the run's span has only its ids: the agent's own spans and log
 * lines still join the caller's trace.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import type * as MetricKeyType from "effect/MetricKeyType"
import type * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as internalJsonLog from "./internal/observability/jsonLogFile.js"
import * as internalMetrics from "./internal/observability/metrics.js"
import * as internalTracing from "./internal/observability/tracing.js"

/**
 * Runs that ended COMPLETED, or answered with a bare message (which the
 * client reads as Completed), tagged `agent`.
 *
 * @example
 * ```ts
 * import { Observability } from "effect-a2a"
 * import { Effect, Metric } from "effect"
 *
 * const completed = Metric.value(Observability.serverCompleted.pipe(Metric.tagged("agent", "booking")))
 * // Effect<MetricState.Counter<number>>: read `.count`
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverCompleted: Metric.Metric.Counter<number> = Metric.fromMetricKey(internalMetrics.serverCompleted)

/**
 * Runs that ended FAILED (the agent failed or died, a hook failed, or the
 * server shut down during the run), tagged `agent`.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const failedRuns = Metric.value(Observability.serverFailed.pipe(Metric.tagged("agent", "booking")))
 * const alarming = Effect.map(failedRuns, (state) => state.count > 10)
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverFailed: Metric.Metric.Counter<number> = Metric.fromMetricKey(internalMetrics.serverFailed)

/**
 * Runs the `beforeExecute` admission hook refused (CANCELED before the
 * agent ran), tagged `agent`.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const refused = Metric.value(Observability.serverCanceledByAdmission.pipe(Metric.tagged("agent", "booking")))
 * const report = Effect.flatMap(refused, (state) => Effect.logInfo(`${state.count} runs refused by admission`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverCanceledByAdmission: Metric.Metric.Counter<number> = Metric.fromMetricKey(
  internalMetrics.serverCanceledByAdmission
)

/**
 * Requests shed with HTTP 429 before anything ran, over `A2AServer`'s
 * `maxInFlight` (tagged `bound: "server"`) or `maxInFlightPerCaller`
 * (`bound: "caller"`), tagged `agent`.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const shed = Metric.value(Observability.serverShed.pipe(Metric.tagged("agent", "booking"), Metric.tagged("bound", "server")))
 * const report = Effect.flatMap(shed, (state) => Effect.logInfo(`${state.count} requests shed`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverShed: Metric.Metric.Counter<number> = Metric.fromMetricKey(internalMetrics.serverShed)

/**
 * Requests refused before anything ran because their credentials were
 * missing or invalid (HTTP 401, gRPC `UNAUTHENTICATED`), tagged `agent`.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const refused = Metric.value(Observability.serverUnauthenticated.pipe(Metric.tagged("agent", "booking")))
 * const report = Effect.flatMap(refused, (state) => Effect.logInfo(`${state.count} requests without valid credentials`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverUnauthenticated: Metric.Metric.Counter<number> = Metric.fromMetricKey(
  internalMetrics.serverUnauthenticated
)

/**
 * Requests by an authenticated caller on a task another caller owns,
 * tagged `agent`. They are answered `TaskNotFound`, as for a task that does
 * not exist; only this counter and a warning in the log tell them apart.
 * Counted with the memory and database task stores, which can tell.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const probes = Metric.value(Observability.serverForbidden.pipe(Metric.tagged("agent", "booking")))
 * const report = Effect.flatMap(probes, (state) => Effect.logInfo(`${state.count} attempts on other callers' tasks`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverForbidden: Metric.Metric.Counter<number> = Metric.fromMetricKey(internalMetrics.serverForbidden)

/**
 * Push notifications a webhook accepted (any 2xx), tagged `agent`: one per
 * event and config, however many attempts it took.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const delivered = Metric.value(Observability.serverPushDelivered.pipe(Metric.tagged("agent", "booking")))
 * const report = Effect.flatMap(delivered, (state) => Effect.logInfo(`${state.count} push notifications delivered`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverPushDelivered: Metric.Metric.Counter<number> = Metric.fromMetricKey(
  internalMetrics.serverPushDelivered
)

/**
 * Push notification attempts after the first, tagged `agent`: each follows a
 * 5xx, a 429 (after its `Retry-After`), a timeout or a broken connection,
 * with exponential backoff and jitter.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const retried = Metric.value(Observability.serverPushRetried.pipe(Metric.tagged("agent", "booking")))
 * const report = Effect.flatMap(retried, (state) => Effect.logInfo(`${state.count} push attempts retried`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverPushRetried: Metric.Metric.Counter<number> = Metric.fromMetricKey(internalMetrics.serverPushRetried)

/**
 * Push notifications given up, tagged `agent`: a 4xx other than 429, a
 * redirect (never followed), or retries run out of attempts or time. Each
 * has a warning in the log with the task id, config id, the URL's host and
 * an error id; never the credentials.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const failed = Metric.value(Observability.serverPushFailed.pipe(Metric.tagged("agent", "booking")))
 * const report = Effect.flatMap(failed, (state) => Effect.logInfo(`${state.count} push notifications lost`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverPushFailed: Metric.Metric.Counter<number> = Metric.fromMetricKey(internalMetrics.serverPushFailed)

/**
 * Push notifications never sent because the address the target resolved to
 * was refused (the SSRF guard), tagged `agent`. Not retried; each has a
 * warning in the log like a failed one.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const refused = Metric.value(Observability.serverPushRefused.pipe(Metric.tagged("agent", "booking")))
 * const report = Effect.flatMap(refused, (state) => Effect.logInfo(`${state.count} push targets refused`))
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverPushRefused: Metric.Metric.Counter<number> = Metric.fromMetricKey(internalMetrics.serverPushRefused)

/**
 * Time from the start of a run to its final status, in milliseconds, for
 * every ending, tagged `agent`. Buckets from 1 ms doubling up to about
 * 9 minutes.
 *
 * @example
 * ```ts
 * import { Effect, Metric } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const latency = Metric.value(Observability.serverLatency.pipe(Metric.tagged("agent", "booking")))
 * const meanMillis = Effect.map(latency, (state) => state.count === 0 ? 0 : state.sum / state.count)
 * ```
 * @category metrics
 * @since 0.1.0
 */
export const serverLatency: Metric.Metric<
  MetricKeyType.MetricKeyType.Histogram,
  number,
  MetricState.MetricState.Histogram
> = Metric
  .fromMetricKey(internalMetrics.serverLatency)

/**
 * The span name of a server run.
 *
 * @example
 * ```ts
 * import type { Tracer } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * // e.g. in a test tracer, to pick out the server's runs
 * const isServerRun = (span: Tracer.Span) => span.name === Observability.executeSpanName
 * ```
 * @category tracing
 * @since 0.1.0
 */
export const executeSpanName: typeof internalTracing.executeSpanName = internalTracing.executeSpanName

/**
 * The span name of a push delivery, its retries included; a child of the
 * task's trace when the request that started the run carried `traceparent`.
 *
 * @example
 * ```ts
 * import type { Tracer } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * // e.g. in a test tracer, to pick out the server's push deliveries
 * const isPush = (span: Tracer.Span) => span.name === Observability.pushSpanName
 * ```
 * @category tracing
 * @since 0.1.0
 */
export const pushSpanName: typeof internalTracing.pushSpanName = internalTracing.pushSpanName

/**
 * The log file could not be opened.
 *
 * @example
 * ```ts
 * import { Console, Effect, Layer } from "effect"
 * import { Observability } from "effect-a2a"
 *
 * const main = Layer.launch(Observability.layerJsonLogs({ file: "/var/log/booking.log" })).pipe(
 *   Effect.catchTag("LogFileError", (error) => Console.error(`cannot log to ${error.path}: ${error.detail}`))
 * )
 * ```
 * @category errors
 * @since 0.1.0
 */
export const LogFileError = internalJsonLog.LogFileError

/**
 * @category errors
 * @since 0.1.0
 */
export type LogFileError = internalJsonLog.LogFileError

/**
 * Where {@link layerJsonLogs} writes.
 *
 * @example
 * ```ts
 * import { Observability } from "effect-a2a"
 *
 * const options: Observability.JsonLogsOptions = { file: process.env["LOG_FILE"] }
 * const Logs = Observability.layerJsonLogs(options) // stdout when LOG_FILE is unset
 * ```
 * @category logging
 * @since 0.1.0
 */
export interface JsonLogsOptions {
  /**
   * Appends to this file (created when missing) instead of writing to
   * stdout; the other loggers stay. Each entry is in the file when the
   * logging effect returns.
   */
  readonly file?: string | undefined
}

/**
 * JSON logs, one object per line in the shape of `Logger.json` (`message`,
 * `logLevel`, `timestamp`, `cause`, `annotations`, `spans`, `fiberId`).
 * Without `file` it replaces the default logger (and the pretty one of
 * `NodeRuntime.runMain`), writing to stdout; with
 * `file` it adds a logger appending to that file, which
 * `effect-a2a find-error` can search.
 *
 * @example
 * ```ts
 * import { A2AServer, Observability } from "effect-a2a"
 * import { Layer } from "effect"
 *
 * declare const ServerLive: Layer.Layer<A2AServer.A2AServer>
 * const Main = ServerLive.pipe(Layer.provide(Observability.layerJsonLogs({ file: "./booking.log" })))
 * ```
 * @category layers
 * @since 0.1.0
 */
export function layerJsonLogs(options?: { readonly file?: undefined }): Layer.Layer<never>
export function layerJsonLogs(options: JsonLogsOptions): Layer.Layer<never, LogFileError>
export function layerJsonLogs(options: JsonLogsOptions = {}): Layer.Layer<never, LogFileError> {
  return options.file === undefined ? jsonStdout : internalJsonLog.layer(options.file)
}

// Like `Logger.json`, but also in place of the pretty logger that
// `NodeRuntime.runMain` puts in place of the default one.
const jsonStdout: Layer.Layer<never> = Layer.scopedDiscard(
  Effect.locallyScopedWith(
    FiberRef.currentLoggers,
    (loggers) =>
      HashSet.add(
        HashSet.remove(HashSet.remove(loggers, Logger.defaultLogger), Logger.prettyLoggerDefault),
        Logger.withConsoleLog(Logger.jsonLogger)
      )
  )
)

/**
 * Adds the current span's trace id to the logs of `self` as the annotation
 * `traceId` (nothing when there is no span).
 *
 * @example
 * ```ts
 * import { Observability } from "effect-a2a"
 * import { Effect } from "effect"
 *
 * Effect.logInfo("charging").pipe(Observability.annotateLogsWithTraceId, Effect.withSpan("charge"))
 * ```
 * @category logging
 * @since 0.1.0
 */
export const annotateLogsWithTraceId = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    Effect.option(Effect.currentParentSpan),
    Option.match({
      onNone: () => self,
      onSome: (span) => Effect.annotateLogs(self, "traceId", span.traceId)
    })
  )
