/**
 * The client of one remote A2A agent, as a service built by a Layer.
 *
 * Building the layer resolves the agent card, so a remote that is missing at
 * start-up fails start-up with an `AgentCardResolutionError`, or, with
 * `onCardFailure: "degrade"`, yields an unavailable agent whose every call
 * fails with an explained `A2AClientError` (reason `Unavailable`).
 *
 * Every call ends in a `RemoteOutcome` (a FAILED task included) or a typed
 * `A2AClientError`; nothing else escapes.
 *
 * @since 0.1.0
 */
import type { AgentCard, Message, StreamResponse, Task } from "@a2a-js/sdk"
import { TaskState } from "@a2a-js/sdk"
import type { Client, RequestOptions } from "@a2a-js/sdk/client"
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import { Clock, Context, Duration, Effect, Either, FiberRef, Layer, LogLevel, Metric, Option, Stream, Tracer } from "effect"
import * as A2AClientError from "./A2AClientError.js"
import type * as AgentCardResolutionError from "./AgentCardResolutionError.js"
import * as Idempotency from "./Idempotency.js"
import { type CallRecord, classifyCall, classifyCard } from "./internal/classify.js"
import * as convert from "./internal/convert.js"
import { cardFetch, makeTrackingFetch } from "./internal/transport.js"
import * as Part from "./Part.js"
import * as RemoteEvent from "./RemoteEvent.js"
import * as RemoteOutcome from "./RemoteOutcome.js"

/**
 * A message to send: plain text, or parts with an optional conversation
 * (`contextId`), task to continue (`taskId`) and metadata.
 *
 * @since 0.1.0
 */
export type Input =
  | string
  | {
    readonly parts: ReadonlyArray<Part.Part>
    readonly contextId?: string | undefined
    readonly taskId?: string | undefined
    readonly metadata?: Readonly<Record<string, unknown>> | undefined
  }

/**
 * Per-call options.
 *
 * @since 0.1.0
 */
export interface CallOptions {
  /** Extra HTTP headers for this call. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Overrides the agent's timeout for this call. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * Sent as message metadata under `Idempotency.metadataKey` and as the
   * `Idempotency-Key` header, so the server can recognise a repeat. See
   * `Idempotency.deriveKey`.
   */
  readonly idempotencyKey?: string | undefined
}

/**
 * @since 0.1.0
 */
export interface RemoteAgent {
  readonly name: string
  readonly url: string
  /** The resolved card; none for an agent degraded at start-up. */
  readonly card: Option.Option<AgentCard>
  /** Sends a message and waits for the task to end (blocking send). */
  readonly send: (
    input: Input,
    options?: CallOptions
  ) => Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>
  /** Streams progress; the last event is `Finished` with the outcome. */
  readonly stream: (
    input: Input,
    options?: CallOptions
  ) => Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>
  readonly getTask: (
    taskId: string,
    options?: CallOptions
  ) => Effect.Effect<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
  readonly cancel: (
    taskId: string,
    options?: CallOptions
  ) => Effect.Effect<RemoteOutcome.TaskView, A2AClientError.A2AClientError>
}

/**
 * The default tag. For several remote agents in one application, give each
 * its own tag:
 *
 * @example
 * ```ts
 * import { Context, Layer } from "effect"
 * import { RemoteAgent } from "effect-a2a"
 *
 * class Booking extends Context.Tag("Booking")<Booking, RemoteAgent.RemoteAgent>() {}
 * const BookingLive = Layer.effect(Booking, RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" }))
 * ```
 * @since 0.1.0
 */
export const RemoteAgent: Context.Tag<RemoteAgent, RemoteAgent> = Context.GenericTag<RemoteAgent>(
  "effect-a2a/RemoteAgent"
)

/**
 * @since 0.1.0
 */
export interface Options {
  /** The name used in errors, logs and metrics. */
  readonly name: string
  /** The agent's base URL; the card is read from `cardPath` below it. */
  readonly url: string
  /** Use this card instead of fetching one. */
  readonly card?: AgentCard | undefined
  /** Default `/.well-known/agent-card.json`. */
  readonly cardPath?: string | undefined
  /** Per call; for streams, the longest wait between two events. Default 30 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Default 10 seconds. */
  readonly cardTimeout?: Duration.DurationInput | undefined
  /** `"fail"` (default) stops start-up; `"degrade"` provides an unavailable agent. */
  readonly onCardFailure?: "fail" | "degrade" | undefined
  /** Largest accepted non-streaming response body. Default 10 MiB. */
  readonly maxResponseBytes?: number | undefined
  /** HTTP headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

const counter = (name: string, agent: string) => Metric.counter(name, { incremental: true }).pipe(Metric.tagged("agent", agent))

const outcomeCounterNames: Record<RemoteOutcome.Tag, string> = {
  Completed: "a2a.remote_completed",
  Failed: "a2a.remote_failed",
  Canceled: "a2a.remote_canceled",
  Rejected: "a2a.remote_rejected",
  InputRequired: "a2a.remote_input_required",
  AuthRequired: "a2a.remote_auth_required"
}

const normalizeInput = (input: Input, options: CallOptions | undefined): Exclude<Input, string> => {
  const message = typeof input === "string" ? { parts: [convert.build(Part.TextPart, { text: input })] } : input
  return options?.idempotencyKey === undefined
    ? message
    : { ...message, metadata: { ...message.metadata, [Idempotency.metadataKey]: options.idempotencyKey } }
}

/**
 * The headers of one call: `traceparent` for its span, so the server's spans
 * join the caller's trace, then the call's own. The agent's headers are added
 * to every request by its fetch (see `makeTrackingFetch`).
 */
const callHeaders = (span: Tracer.AnySpan | undefined, options: CallOptions | undefined): Record<string, string> => {
  const headers: Record<string, string> = span?._tag === "Span"
    ? { traceparent: HttpTraceContext.toHeaders(span).traceparent! }
    : {}
  if (options?.headers !== undefined) Object.assign(headers, options.headers)
  if (options?.idempotencyKey !== undefined) headers[Idempotency.headerName] = options.idempotencyKey
  return headers
}

const isMessage = (result: Message | Task): result is Message => !("status" in result) && "messageId" in result

/** The span of the caller, if any: a stream's span, or the user's. */
const contextSpan: Effect.Effect<Tracer.AnySpan | undefined> = Effect.map(
  Effect.serviceOption(Tracer.ParentSpan),
  Option.getOrUndefined
)

/** Annotates logs with the trace id, so both sides of a hop can be found in one search. */
const withTraceId =
  (span: Tracer.AnySpan | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    span === undefined ? effect : Effect.annotateLogs(effect, "traceId", span.traceId)

/**
 * Instruments calls: metrics per channel, log annotations, a span. Built once
 * per agent. This runs on every call, so the span is handed to the call
 * explicitly instead of being provided through the context, and the log level
 * is checked before a log line is built.
 */
const instrument = (agent: string) => {
  const outcomeCounters = Object.fromEntries(
    Object.entries(outcomeCounterNames).map(([tag, name]) => [tag, counter(name, agent)])
  ) as Record<RemoteOutcome.Tag, ReturnType<typeof counter>>
  const errorCounters = Object.fromEntries(
    A2AClientError.Reason.literals.map((reason) => [reason, counter("a2a.client_error", agent).pipe(Metric.tagged("reason", reason))])
  ) as Record<A2AClientError.Reason, ReturnType<typeof counter>>
  const logOutcome = (
    span: Tracer.AnySpan | undefined,
    operation: A2AClientError.Operation,
    outcome: RemoteOutcome.RemoteOutcome,
    level: LogLevel.LogLevel
  ) => {
    const errorId = Option.getOrUndefined(RemoteOutcome.errorIdOf(outcome))
    return Effect.logWithLevel(level, `remote agent ${agent}: ${operation} ended ${outcome._tag}`).pipe(
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
  const onValue = (
    span: Tracer.AnySpan | undefined,
    operation: A2AClientError.Operation,
    outcome: RemoteOutcome.TaskView
  ) => {
    if (outcome._tag === "Running") return Effect.void
    if (span?._tag === "Span") {
      span.attribute("a2a.task_id", outcome.taskId)
      span.attribute("a2a.outcome", outcome._tag)
    }
    const level = outcome._tag === "Failed" ? LogLevel.Warning : LogLevel.Debug
    // What `Metric.update` does, and the log line only when it will be written, in one step.
    return Effect.withFiberRuntime<void>((fiber) => {
      outcomeCounters[outcome._tag].unsafeUpdate(1, fiber.getFiberRef(FiberRef.currentMetricLabels))
      return LogLevel.greaterThanEqual(level, fiber.getFiberRef(FiberRef.currentMinimumLogLevel))
        ? logOutcome(span, operation, outcome, level)
        : Effect.void
    })
  }
  const onError = (span: Tracer.AnySpan | undefined, error: A2AClientError.A2AClientError) =>
    Metric.update(errorCounters[error.reason], 1).pipe(
      Effect.zipRight(Effect.logWarning(error.message)),
      Effect.annotateLogs({
        agent,
        reason: error.reason,
        delivery: error.delivery,
        ...(error.taskId === undefined ? {} : { taskId: error.taskId }),
        ...(error.contextId === undefined ? {} : { contextId: error.contextId })
      }),
      withTraceId(span)
    )
  const spanOptions = { attributes: { "a2a.agent": agent }, kind: "client", captureStackTrace: false } as const
  /** Runs `body` in a client span and records how it ended. */
  const observe = <A extends RemoteOutcome.TaskView>(
    operation: A2AClientError.Operation,
    body: (span: Tracer.Span) => Effect.Effect<A, A2AClientError.A2AClientError>
  ): Effect.Effect<A, A2AClientError.A2AClientError> =>
    Effect.useSpan(`RemoteAgent.${operation}`, spanOptions, (span) =>
      Effect.tapBoth(body(span), {
        onSuccess: (value) => onValue(span, operation, value),
        onFailure: (error) => onError(span, error)
      }))
  return { observe, onValue, onError }
}

/**
 * When the call's span started, in the Clock's milliseconds: read off the span
 * so that a call does not read the Clock a second time.
 */
const startMillis = (span: Tracer.Span): number | undefined =>
  span.status.startTime > 0n ? Number(span.status.startTime / 1_000_000n) : undefined

const timeoutError = () => new DOMException("The operation timed out", "TimeoutError")

/**
 * Runs one SDK call with a signal that aborts on interruption and on time-out,
 * and classifies whatever it throws. Written with `Effect.async` and one
 * controller because it runs on every call.
 */
const callWith = (
  agent: string,
  track: (signal: AbortSignal) => CallRecord,
  defaultTimeout: Duration.Duration
) =>
<A, B>(
  operation: A2AClientError.Operation,
  options: CallOptions | undefined,
  ids: { readonly taskId?: string | undefined; readonly contextId?: string | undefined },
  span: Tracer.AnySpan | undefined,
  run: (requestOptions: RequestOptions) => Promise<A>,
  decode: (response: A) => Either.Either<B, A2AClientError.A2AClientError>
): Effect.Effect<B, A2AClientError.A2AClientError> =>
  Effect.async<B, A2AClientError.A2AClientError>((resume) => {
    const controller = new AbortController()
    const record = track(controller.signal)
    const timer = setTimeout(() => controller.abort(timeoutError()), Duration.toMillis(options?.timeout ?? defaultTimeout))
    const fail = (error: unknown) => {
      clearTimeout(timer)
      resume(Effect.fail(classifyCall(error, { agent, operation, record, streamStarted: false, ...ids })))
    }
    try {
      run({ signal: controller.signal, serviceParameters: callHeaders(span, options) }).then(
        (value) => {
          clearTimeout(timer)
          let decoded: Either.Either<B, A2AClientError.A2AClientError>
          try {
            decoded = decode(value)
          } catch (error) {
            // A throw here would otherwise be lost in the promise chain and leave the call hanging.
            decoded = Either.left(invalid(agent, operation, `the response could not be converted: ${String(error)}`, ids))
          }
          resume(decoded)
        },
        fail
      )
    } catch (error) {
      fail(error)
    }
    return Effect.sync(() => {
      clearTimeout(timer)
      controller.abort()
    })
  })

const invalid = (
  agent: string,
  operation: A2AClientError.Operation,
  detail: string,
  ids: { readonly taskId?: string | undefined; readonly contextId?: string | undefined }
) =>
  new A2AClientError.A2AClientError({
    agent,
    operation,
    reason: "InvalidResponse",
    delivery: "Unknown",
    detail,
    ...(ids.taskId ? { taskId: ids.taskId } : {}),
    ...(ids.contextId ? { contextId: ids.contextId } : {})
  })

const makeClient = (agentOptions: Options, client: Client, card: AgentCard, track: (signal: AbortSignal) => CallRecord) => {
  const agent = agentOptions.name
  const timeout = Duration.decode(agentOptions.timeout ?? Duration.seconds(30))
  const call = callWith(agent, track, timeout)
  const { observe, onError, onValue } = instrument(agent)

  const view = (operation: A2AClientError.Operation) =>
  (task: Task): Either.Either<RemoteOutcome.TaskView, A2AClientError.A2AClientError> => {
    const ids = { taskId: task.id, contextId: task.contextId }
    if (typeof task.id !== "string" || task.id === "") {
      return Either.left(invalid(agent, operation, "the response holds a task without an id", ids))
    }
    const outcome = convert.taskOutcome(agent, task)
    if (Option.isSome(outcome)) return Either.right(outcome.value)
    const state = task.status?.state
    if (convert.isRunning(state)) {
      return Either.right(
        convert.build(RemoteOutcome.Running, {
          agent,
          taskId: task.id,
          contextId: String(task.contextId ?? ""),
          state: state === TaskState.TASK_STATE_SUBMITTED ? "Submitted" : "Working",
          text: Part.textOf((task.status?.message?.parts ?? []).map(convert.fromSdkPart))
        })
      )
    }
    return Either.left(invalid(agent, operation, `the task is in an unrecognised state (${convert.stateName(state)})`, ids))
  }

  const getTaskView = (taskId: string, options: CallOptions | undefined, span: Tracer.AnySpan | undefined) =>
    call("GetTask", options, { taskId }, span, (o) => client.getTask({ tenant: "", id: taskId }, o), view("GetTask"))

  /** Polls a task that a blocking send returned unfinished, until it ends or the call's time is up. */
  const awaitEnd = (
    running: RemoteOutcome.Running,
    started: number | undefined,
    limit: Duration.DurationInput,
    options: CallOptions | undefined,
    span: Tracer.Span
  ): Effect.Effect<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError> =>
    Effect.gen(function*() {
      const deadline = (started ?? (yield* Clock.currentTimeMillis)) + Duration.toMillis(limit)
      let delay = 25
      let current: RemoteOutcome.TaskView = running
      while (current._tag === "Running") {
        const now = yield* Clock.currentTimeMillis
        if (now >= deadline) {
          return yield* Effect.fail(
            new A2AClientError.A2AClientError({
              agent,
              operation: "SendMessage",
              reason: "Timeout",
              delivery: "Unknown",
              detail: `task ${running.taskId} did not end within ${Duration.format(timeout)}`,
              taskId: running.taskId,
              contextId: running.contextId
            })
          )
        }
        yield* Effect.sleep(Math.min(delay, deadline - now))
        delay = Math.min(delay * 2, 1000)
        // The message was accepted: whatever a poll hits, the send's own delivery is not "NotSent".
        current = yield* getTaskView(running.taskId, options, span).pipe(
          Effect.mapError((error) =>
            new A2AClientError.A2AClientError({
              ...error,
              operation: "SendMessage",
              delivery: "Unknown",
              taskId: running.taskId,
              contextId: running.contextId,
              detail: `task ${running.taskId} was accepted; polling it failed: ${error.detail}`
            })
          )
        )
      }
      return current
    })

  const viewSent = view("SendMessage")
  const send: RemoteAgent["send"] = (input, options) =>
    observe("SendMessage", (span) => {
      const message = convert.userMessage(normalizeInput(input, options))
      const ids = { contextId: message.contextId, taskId: message.taskId }
      return call(
        "SendMessage",
        options,
        ids,
        span,
        (o) => client.sendMessage({ tenant: "", message, configuration: undefined, metadata: undefined }, o),
        (result) => isMessage(result) ? Either.right(convert.messageOutcome(agent, result)) : viewSent(result)
      ).pipe(
        Effect.flatMap((current) =>
          current._tag === "Running"
            ? awaitEnd(current, startMillis(span), options?.timeout ?? timeout, options, span)
            : Effect.succeed(current)
        )
      )
    })

  const viewStreamed = view("SendStreamingMessage")
  const stream: RemoteAgent["stream"] = (input, options) =>
    Stream.suspend(() => {
      const message = convert.userMessage(normalizeInput(input, options))
      const state = {
        taskId: message.taskId,
        contextId: message.contextId,
        started: false,
        finished: false,
        artifacts: new Map<string, Part.Artifact>()
      }
      const ids = () => ({ taskId: state.taskId, contextId: state.contextId })
      const idle = Duration.decode(options?.timeout ?? timeout)
      const finish = (outcome: RemoteOutcome.RemoteOutcome) => {
        state.finished = true
        return [RemoteEvent.Finished.make({ outcome })]
      }
      const toEvents = (response: StreamResponse): Effect.Effect<ReadonlyArray<RemoteEvent.RemoteEvent>, A2AClientError.A2AClientError> => {
        state.started = true
        const payload = response.payload
        switch (payload?.$case) {
          case "message":
            return Effect.succeed(finish(convert.messageOutcome(agent, payload.value)))
          case "task": {
            state.taskId = payload.value.id || state.taskId
            state.contextId = payload.value.contextId || state.contextId
            for (const artifact of payload.value.artifacts ?? []) {
              state.artifacts.set(artifact.artifactId, convert.fromSdkArtifact(artifact))
            }
            return Either.map(viewStreamed(payload.value), (v) =>
              v._tag === "Running"
                ? [RemoteEvent.Status.make({ agent, taskId: v.taskId, contextId: v.contextId, state: v.state, text: v.text, parts: [] })]
                : finish(v))
          }
          case "statusUpdate": {
            const update = payload.value
            state.taskId = update.taskId || state.taskId
            state.contextId = update.contextId || state.contextId
            const status = update.status
            const outcome = convert.outcomeOf(agent, state.taskId, state.contextId, status?.state, status?.message, [
              ...state.artifacts.values()
            ])
            if (Option.isSome(outcome)) return Effect.succeed(finish(outcome.value))
            if (!convert.isRunning(status?.state)) {
              return Effect.fail(
                invalid(agent, "SendStreamingMessage", `status update in an unrecognised state (${convert.stateName(status?.state)})`, ids())
              )
            }
            const parts = (status?.message?.parts ?? []).map(convert.fromSdkPart)
            return Effect.succeed([
              RemoteEvent.Status.make({
                agent,
                taskId: state.taskId,
                contextId: state.contextId,
                state: status?.state === TaskState.TASK_STATE_SUBMITTED ? "Submitted" : "Working",
                text: Part.textOf(parts),
                parts
              })
            ])
          }
          case "artifactUpdate": {
            const update = payload.value
            if (update.artifact === undefined) {
              return Effect.fail(invalid(agent, "SendStreamingMessage", "artifact update without an artifact", ids()))
            }
            const chunk = convert.fromSdkArtifact(update.artifact)
            const previous = state.artifacts.get(chunk.artifactId)
            state.artifacts.set(
              chunk.artifactId,
              update.append && previous !== undefined
                ? Part.Artifact.make({ ...previous, parts: [...previous.parts, ...chunk.parts] })
                : chunk
            )
            return Effect.succeed([
              RemoteEvent.ArtifactChunk.make({
                agent,
                taskId: state.taskId,
                contextId: state.contextId,
                artifact: chunk,
                append: update.append === true,
                lastChunk: update.lastChunk === true
              })
            ])
          }
          default:
            return Effect.fail(invalid(agent, "SendStreamingMessage", "stream event without a payload", ids()))
        }
      }

      /** A stream cut before a final state: ask once for the task's real state. */
      const recover = (error: A2AClientError.A2AClientError): Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError> => {
        const recoverable = error.reason === "StreamInterrupted" || error.reason === "ConnectionLost" ||
          (error.reason === "Timeout" && error.delivery === "Unknown")
        if (!recoverable || state.taskId === "") return Stream.fail(error)
        return Stream.fromEffect(
          Effect.flatMap(contextSpan, (span) => getTaskView(state.taskId, options, span)).pipe(
            Effect.flatMap((v) => (v._tag === "Running" ? Effect.fail(error) : Effect.succeed(RemoteEvent.Finished.make({ outcome: v })))),
            Effect.catchAll(() => Effect.fail(error))
          )
        )
      }

      const record: { current?: CallRecord } = {}
      const events = Stream.acquireRelease(
        Effect.sync(() => new AbortController()),
        (controller) => Effect.sync(() => controller.abort())
      ).pipe(
        Stream.zip(Stream.fromEffect(contextSpan)),
        Stream.flatMap(([controller, span]) => {
          record.current = track(controller.signal)
          const generator = client.sendMessageStream(
            { tenant: "", message, configuration: undefined, metadata: undefined },
            { signal: controller.signal, serviceParameters: callHeaders(span, options) }
          )
          // `return()` on a generator waits for its pending `next()`; abort first so that it settles.
          const iterable: AsyncIterable<StreamResponse> = {
            [Symbol.asyncIterator]: () => ({
              next: () => generator.next(),
              return: (value?: unknown) => {
                controller.abort()
                return generator.return(value as undefined)
              }
            })
          }
          return Stream.fromAsyncIterable(
            iterable,
            (error) =>
              classifyCall(error, {
                agent,
                operation: "SendStreamingMessage",
                record: record.current,
                streamStarted: state.started,
                ...ids()
              })
          )
        }),
        Stream.timeoutFail(
          () =>
            new A2AClientError.A2AClientError({
              agent,
              operation: "SendStreamingMessage",
              reason: "Timeout",
              delivery: record.current?.sent === false ? "NotSent" : "Unknown",
              detail: `no stream event within ${Duration.format(idle)}`,
              ...(state.taskId ? { taskId: state.taskId } : {}),
              ...(state.contextId ? { contextId: state.contextId } : {})
            }),
          idle
        ),
        Stream.mapEffect(toEvents),
        Stream.flattenIterables,
        Stream.takeUntil((event) => event._tag === "Finished"),
        Stream.concat(
          Stream.suspend(() =>
            state.finished
              ? Stream.empty
              : Stream.fail(
                new A2AClientError.A2AClientError({
                  agent,
                  operation: "SendStreamingMessage",
                  reason: "StreamInterrupted",
                  delivery: "Unknown",
                  detail: "the stream ended before the task reached a final state",
                  ...(state.taskId ? { taskId: state.taskId } : {}),
                  ...(state.contextId ? { contextId: state.contextId } : {})
                })
              )
          )
        ),
        Stream.catchAll(recover)
      )
      return events.pipe(
        Stream.tap((event) =>
          event._tag === "Finished" ? Effect.flatMap(contextSpan, (span) => onValue(span, "SendStreamingMessage", event.outcome)) : Effect.void
        ),
        Stream.tapError((error) => Effect.flatMap(contextSpan, (span) => onError(span, error))),
        Stream.withSpan("RemoteAgent.stream", { attributes: { "a2a.agent": agent }, kind: "client", captureStackTrace: false })
      )
    })

  const agentService: RemoteAgent = {
    name: agent,
    url: agentOptions.url,
    card: Option.some(card),
    send,
    stream,
    getTask: (taskId, o) => observe("GetTask", (span) => getTaskView(taskId, o, span)),
    cancel: (taskId, o) =>
      observe("CancelTask", (span) =>
        call("CancelTask", o, { taskId }, span, (ro) => client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, ro), view("CancelTask")))
  }
  return agentService
}

/**
 * An agent whose card could not be resolved at start-up: every call fails
 * with reason `Unavailable`, delivery `NotSent`, explaining why.
 *
 * @since 0.1.0
 */
export const unavailable = (cause: AgentCardResolutionError.AgentCardResolutionError): RemoteAgent => {
  const fail = (operation: A2AClientError.Operation) =>
    new A2AClientError.A2AClientError({
      agent: cause.agent,
      operation,
      reason: "Unavailable",
      delivery: "NotSent",
      detail: `the agent was not available at start-up: ${cause.message}`
    })
  const errorCounter = counter("a2a.client_error", cause.agent).pipe(Metric.tagged("reason", "Unavailable"))
  const failing = (operation: A2AClientError.Operation) =>
    Metric.update(errorCounter, 1).pipe(Effect.zipRight(Effect.fail(fail(operation))))
  return {
    name: cause.agent,
    url: cause.url,
    card: Option.none(),
    send: () => failing("SendMessage"),
    stream: () => Stream.fromEffect(failing("SendStreamingMessage")),
    getTask: () => failing("GetTask"),
    cancel: () => failing("CancelTask")
  }
}

const resolveClient = (options: Options, tracking: ReturnType<typeof makeTrackingFetch>) =>
  Effect.gen(function*() {
    const maxBytes = options.maxResponseBytes ?? 10 * 1024 * 1024
    const record: CallRecord = { sent: false }
    const cardMillis = Duration.toMillis(options.cardTimeout ?? Duration.seconds(10))
    const context = { agent: options.name, url: options.url, record }
    return yield* Effect.tryPromise({
      try: async (interrupt) => {
        const signal = AbortSignal.any([interrupt, AbortSignal.timeout(cardMillis)])
        const resolver = new DefaultAgentCardResolver({
          fetchImpl: cardFetch(record, signal, maxBytes, options.headers ?? {}),
          legacyCompat: { enabled: true },
          ...(options.cardPath === undefined ? {} : { path: options.cardPath })
        })
        const card = options.card ?? (await resolver.resolve(options.url))
        const factory = new ClientFactory({
          transports: [new JsonRpcTransportFactory({ fetchImpl: tracking.fetch, legacyCompat: { enabled: true } })],
          cardResolver: resolver,
          clientConfig: { polling: false }
        })
        const client = await factory.createFromAgentCard(card)
        // May fetch the extended card: bounded like the rest of the resolution.
        return { client, card: await client.getAgentCard({ signal }) }
      },
      catch: (error) => classifyCard(error, context)
    })
  })

/**
 * Resolves the card and builds the client.
 *
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { RemoteAgent, RemoteOutcome } from "effect-a2a"
 *
 * const program = Effect.gen(function*() {
 *   const booking = yield* RemoteAgent.make({ name: "booking", url: "http://127.0.0.1:8000" })
 *   const outcome = yield* booking.send("book flight 4821 for Ana")
 *   return RemoteOutcome.$match({
 *     Completed: (o) => o.text,
 *     Failed: (o) => `failed (error id ${Option.getOrElse(o.errorId, () => "none")})`,
 *     Canceled: () => "canceled",
 *     Rejected: (o) => o.text,
 *     InputRequired: (o) => o.text,
 *     AuthRequired: () => "auth required"
 *   })(outcome)
 * })
 * ```
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<RemoteAgent, AgentCardResolutionError.AgentCardResolutionError> =>
  Effect.gen(function*() {
    const tracking = makeTrackingFetch(options.maxResponseBytes ?? 10 * 1024 * 1024, options.headers ?? {})
    const resolved = yield* resolveClient(options, tracking).pipe(
      Effect.tapError((error) =>
        Metric.update(counter("a2a.card_resolution_error", options.name).pipe(Metric.tagged("reason", error.reason)), 1)
      )
    )
    return makeClient(options, resolved.client, resolved.card, tracking.track)
  }).pipe(
    Effect.catchAll((error) =>
      options.onCardFailure === "degrade"
        ? Effect.logWarning(`remote agent ${options.name} is unavailable; starting degraded`).pipe(
          Effect.annotateLogs({ agent: options.name, url: options.url, reason: error.reason, cause: error.message }),
          Effect.as(unavailable(error))
        )
        : Effect.fail(error)
    ),
    Effect.withSpan("RemoteAgent.resolveCard", { attributes: { "a2a.agent": options.name, "a2a.url": options.url } })
  )

/**
 * A layer providing {@link RemoteAgent}; building it resolves the card.
 *
 * @example
 * ```ts
 * import { RemoteAgent } from "effect-a2a"
 *
 * const BookingLive = RemoteAgent.layer({ name: "booking", url: "http://127.0.0.1:8000", onCardFailure: "degrade" })
 * ```
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<RemoteAgent, AgentCardResolutionError.AgentCardResolutionError> =>
  Layer.effect(RemoteAgent, make(options))
