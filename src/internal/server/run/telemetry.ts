/**
 * What a run reports beside its events: its span, started before its fiber
 * and ended with its final status, and the server's run metrics. A span
 * carries the error id of a failure, never its cause, which only the log
 * holds.
 *
 * @internal
 */
import { TaskState } from "@a2a-js/sdk"
import type * as Clock from "effect/Clock"
import * as Exit from "effect/Exit"
import * as FiberRefs from "effect/FiberRefs"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import { withoutStackTrace } from "../../errors.js"
import * as internalMetrics from "../../observability/metrics.js"
import * as internalTracing from "../../observability/tracing.js"
import * as taskState from "../../wire/taskState.js"
import * as internalFailure from "./failure.js"
import { isReply, type RunEnd } from "./finalStatus.js"

const runMetrics = (agentName: string) => {
  const agentTag = { agent: agentName }
  return {
    completed: internalMetrics.tagged(internalMetrics.serverCompleted, agentTag),
    failed: internalMetrics.tagged(internalMetrics.serverFailed, agentTag),
    canceledByAdmission: internalMetrics.tagged(internalMetrics.serverCanceledByAdmission, agentTag),
    latency: internalMetrics.tagged(internalMetrics.serverLatency, agentTag)
  }
}

/** What the spans and metrics of one executor's runs share. */
export interface Telemetry {
  readonly clock: Clock.Clock
  readonly exporting: boolean
  readonly spanSettings: internalTracing.SpanSettings
  /** What a failed run's span ends with when it goes nowhere: one shared value instead of a new error per run. */
  readonly unexportedFailure: Exit.Exit<never, internalFailure.RunFailed>
  readonly agentName: string
  readonly metrics: ReturnType<typeof runMetrics>
}

export const makeTelemetry = (
  agentName: string,
  fiberRefs: FiberRefs.FiberRefs,
  tracer: Tracer.Tracer,
  clock: Clock.Clock
): Telemetry => ({
  clock,
  exporting: internalTracing.exportsSpans(tracer),
  // Each run's span is made before its fiber, and handed to it in its context.
  spanSettings: internalTracing.spanSettings((ref) => FiberRefs.getOrDefault(fiberRefs, ref), tracer, clock),
  unexportedFailure: Exit.fail(new internalFailure.RunFailed({ errorId: "unknown" })),
  agentName,
  metrics: runMetrics(agentName)
})

/** The span of a run: exported with its attributes, or only its ids when spans go nowhere. */
export const runSpan = (telemetry: Telemetry, request: AgentExecutor.AgentRequest): Tracer.Span | undefined => {
  const parentSpan = internalTracing.parentOfHeaders(request.headers)
  const name = internalTracing.executeSpanName
  return !telemetry.spanSettings.enabled
    ? undefined
    : telemetry.exporting
    ? internalTracing.startSpan(telemetry.spanSettings, name, parentSpan, "server", {
      "a2a.task_id": request.taskId,
      "a2a.context_id": request.contextId,
      "a2a.agent": telemetry.agentName,
      ...(Option.isSome(request.caller) ? { "a2a.caller": request.caller.value.id } : {})
    })
    : new internalTracing.UnexportedSpan(name, parentSpan, "server")
}

/** Once the final status is known: the metrics, and the end of the span. */
export const finishRun = (
  telemetry: Telemetry,
  span: Tracer.Span | undefined,
  startedAt: number,
  refused: boolean,
  published: RunEnd
): void => {
  const { clock, metrics } = telemetry
  if (isReply(published)) {
    // Answered, without a task: a success, as the client reads it (Completed).
    metrics.completed.unsafeUpdate(1, [])
    metrics.latency.unsafeUpdate(clock.unsafeCurrentTimeMillis() - startedAt, [])
    if (span === undefined) return
    if (!telemetry.exporting) return span.end(0n, Exit.void)
    span.attribute("a2a.reply", "message")
    return internalTracing.endSpan(telemetry.spanSettings, span, Exit.void)
  }
  const state = published.event.status?.state
  const errorId = Option.getOrUndefined(Option.map(published.failure, (failure) => failure.errorId))
  if (state === TaskState.TASK_STATE_COMPLETED) metrics.completed.unsafeUpdate(1, [])
  else if (state === TaskState.TASK_STATE_FAILED) metrics.failed.unsafeUpdate(1, [])
  else if (state === TaskState.TASK_STATE_CANCELED && refused) metrics.canceledByAdmission.unsafeUpdate(1, [])
  metrics.latency.unsafeUpdate(clock.unsafeCurrentTimeMillis() - startedAt, [])
  if (span === undefined) return
  const failed = state === TaskState.TASK_STATE_FAILED
  if (!telemetry.exporting) return span.end(0n, failed ? telemetry.unexportedFailure : Exit.void)
  span.attribute("a2a.task_state", taskState.name(state))
  if (errorId !== undefined) {
    span.attribute("a2a.error_id", errorId)
    span.event("a2a.failure", clock.unsafeCurrentTimeNanos(), { "a2a.error_id": errorId })
  }
  internalTracing.endSpan(
    telemetry.spanSettings,
    span,
    failed
      ? Exit.fail(withoutStackTrace(() => new internalFailure.RunFailed({ errorId: errorId ?? "unknown" })))
      : Exit.void
  )
}
