/**
 * Metric keys of the server, and tagged metrics for hot paths.
 *
 * @internal
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import type * as MetricKeyType from "effect/MetricKeyType"

/**
 * The metric of `key` with `tags` added. Unlike `Metric.tagged`, which builds
 * and hashes the tagged key on every update to find its entry in the
 * registry, this finds the entry once.
 *
 * @internal
 */
export const tagged = <Type extends MetricKeyType.MetricKeyType.Untyped>(
  key: MetricKey.MetricKey<Type>,
  tags: Readonly<Record<string, string>>
) =>
  Metric.fromMetricKey(
    Object.entries(tags).reduce((tagged, [name, value]) => MetricKey.tagged(tagged, name, value), key)
  )

/** @internal */
export const serverCompleted = MetricKey.counter("a2a.server.completed", {
  description: "A2A runs that ended COMPLETED or answered with a bare message",
  incremental: true
})

/** @internal */
export const serverFailed = MetricKey.counter("a2a.server.failed", {
  description: "A2A runs that ended FAILED, each with an error id in the log",
  incremental: true
})

/** @internal */
export const serverCanceledByAdmission = MetricKey.counter("a2a.server.canceled_by_admission", {
  description: "A2A runs canceled by the admission hook before the agent ran",
  incremental: true
})

/** @internal */
export const serverShed = MetricKey.counter("a2a.server.shed", {
  description: "A2A requests shed with 429 before anything ran, over maxInFlight or maxInFlightPerCaller",
  incremental: true
})

/** @internal */
export const serverUnauthenticated = MetricKey.counter("a2a.server.unauthenticated", {
  description: "A2A requests refused before anything ran, for credentials missing or invalid",
  incremental: true
})

/** @internal */
export const serverForbidden = MetricKey.counter("a2a.server.forbidden", {
  description: "A2A requests on a task of another caller, answered TaskNotFound",
  incremental: true
})

/** @internal */
export const serverPushDelivered = MetricKey.counter("a2a.server.push_delivered", {
  description: "A2A push notifications a webhook accepted with 2xx",
  incremental: true
})

/** @internal */
export const serverPushRetried = MetricKey.counter("a2a.server.push_retried", {
  description: "A2A push notification attempts after the first: a 5xx, a 429, a timeout or a broken connection before",
  incremental: true
})

/** @internal */
export const serverPushFailed = MetricKey.counter("a2a.server.push_failed", {
  description: "A2A push notifications given up, each with an error id in the log",
  incremental: true
})

/** @internal */
export const serverPushRefused = MetricKey.counter("a2a.server.push_refused", {
  description: "A2A push notifications never sent: the target's address was refused at connection",
  incremental: true
})

/** @internal */
export const serverLatency = MetricKey.histogram(
  "a2a.server.latency",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 20 }),
  "A2A run latency in milliseconds, from the start of a run to its final status"
)
