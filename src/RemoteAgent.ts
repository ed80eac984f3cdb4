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
import type { Client } from "@a2a-js/sdk/client"
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { Context, Duration, Effect, Either, Layer, Metric, Option, Stream, Struct, Tracer } from "effect"
import * as A2AClientError from "./A2AClientError.js"
import type * as AgentCardResolutionError from "./AgentCardResolutionError.js"
import { type CallRecord, classifyCall, classifyCard } from "./internal/client/classify.js"
import * as clientCall from "./internal/client/call.js"
import * as convert from "./internal/client/outcome.js"
import { cardFetch, makeTrackingFetch } from "./internal/client/transport.js"
import * as IdempotencyKey from "./internal/wire/idempotencyKey.js"
import * as json from "./internal/wire/json.js"
import * as wireParts from "./internal/wire/parts.js"
import * as taskState from "./internal/wire/taskState.js"
import * as Part from "./Part.js"
import * as RemoteEvent from "./RemoteEvent.js"
import * as RemoteOutcome from "./RemoteOutcome.js"

/**
 * A message to send: plain text, or parts with an optional conversation
 * (`contextId`), task to continue (`taskId`) and metadata.
 *
 * @example
 * ```ts
 * import { Part, RemoteAgent } from "effect-a2a"
 *
 * const simple: RemoteAgent.Input = "book flight 4821 for Ana"
 * const detailed: RemoteAgent.Input = {
 *   parts: [Part.TextPart.make({ text: "book this flight" }), Part.DataPart.make({ data: { flight: "4821" } })],
 *   contextId: "trip-42",
 *   metadata: { channel: "web" }
 * }
 * ```
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
 * @example
 * ```ts
 * import { RemoteAgent } from "effect-a2a"
 *
 * declare const booking: RemoteAgent.RemoteAgent
 * const options: RemoteAgent.CallOptions = { timeout: "2 minutes", idempotencyKey: "order-1234", headers: { "x-tenant": "acme" } }
 * booking.send("book flight 4821 for Ana", options)
 * ```
 * @since 0.1.0
 */
export interface CallOptions {
  /** Extra HTTP headers for this call. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Overrides the agent's timeout for this call. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * Sent as message metadata under `IdempotencyKey.metadataKey` and as the
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
 * How {@link make} and {@link layer} reach the agent and how long they wait.
 *
 * @example
 * ```ts
 * import { RemoteAgent } from "effect-a2a"
 *
 * const options: RemoteAgent.Options = {
 *   name: "booking",
 *   url: "https://booking.internal",
 *   timeout: "10 seconds",
 *   onCardFailure: "degrade",
 *   headers: { authorization: `Bearer ${process.env["BOOKING_TOKEN"] ?? ""}` }
 * }
 * const BookingLive = RemoteAgent.layer(options)
 * ```
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

/** The SDK message of a call; an idempotency key also goes into its metadata. */
const messageOf = (input: Input, options: CallOptions | undefined): Message => {
  const key = options?.idempotencyKey
  if (typeof input === "string") {
    const metadata = key === undefined ? undefined : { [IdempotencyKey.metadataKey]: key }
    return wireParts.userMessage([wireParts.textPart(input)], {}, metadata)
  }
  return wireParts.userMessage(
    input.parts.map(wireParts.toWirePart),
    input,
    key === undefined
      ? input.metadata === undefined ? undefined : { ...input.metadata }
      : { ...input.metadata, [IdempotencyKey.metadataKey]: key }
  )
}

const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// What fetch refuses in a header value: a control character other than tab (DEL included), or one beyond a byte.
const badHeaderValue = /[^\t\u0020-\u007e\u0080-\u00ff]/
const unsendableValue = "it holds a control character other than tab, or a character beyond Latin-1"

/** Why `headers` cannot be sent, or none. */
const headersProblem = (headers: Readonly<Record<string, string>> | undefined, whose: string): string | undefined => {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!headerName.test(name)) return `${whose} header name ${JSON.stringify(name)} is not an HTTP token`
    if (badHeaderValue.test(value)) return `the value of ${whose} header ${name} cannot be sent (${unsendableValue})`
  }
  return undefined
}

/**
 * Why a call's options cannot be sent, or none: a header fetch would refuse,
 * or an idempotency key it would refuse or change (it trims spaces and tabs
 * at the ends, and the key in the metadata must be the same).
 */
const optionsProblem = (options: CallOptions | undefined): string | undefined => {
  if (options === undefined) return undefined
  const key = options.idempotencyKey
  if (key !== undefined && badHeaderValue.test(key)) return `the idempotency key cannot be sent as a header (${unsendableValue})`
  if (key !== undefined && /^[\t ]|[\t ]$/.test(key)) return "the idempotency key starts or ends with a space or a tab"
  return headersProblem(options.headers, "the call's")
}

/** Where a message's data parts or metadata stop being JSON data, or none. */
const inputProblem = (input: Input): string | undefined => {
  if (typeof input === "string") return undefined
  const problem = json.partsNotJson(input.parts, "parts") ??
    (input.metadata === undefined ? undefined : json.notJson(input.metadata, "metadata"))
  return problem === undefined ? undefined : `the message is not JSON data at ${problem.path}: ${problem.found}`
}

const inputIds = (input: Input): clientCall.Ids =>
  typeof input === "string" ? {} : { taskId: input.taskId, contextId: input.contextId }

/** The typed error of a call that is never sent, because `detail`. */
const invalidRequest = (agent: string, operation: A2AClientError.Operation, ids: clientCall.Ids, detail: string) =>
  clientCall.callError(agent, operation, "InvalidRequest", "NotSent", detail, ids)

/** How long the last poll before a call's deadline leaves for its answer. */
const pollAnswerMillis = 20

const isMessage = (result: Message | Task): result is Message => !("status" in result) && "messageId" in result

/** The span of the caller, if any: a stream's span, or the user's. */
const contextSpan: Effect.Effect<Tracer.AnySpan | undefined> = Effect.withFiberRuntime((fiber) =>
  Effect.succeed(clientCall.tracedSpan(fiber))
)

const makeClient = (agentOptions: Options, client: Client, card: AgentCard, track: (signal: AbortSignal) => CallRecord) => {
  const agent = agentOptions.name
  const timeout = Duration.decode(agentOptions.timeout ?? Duration.seconds(30))
  const { operate, reportStream, request } = clientCall.make(agent, track, timeout)
  // The agent's own headers go with every request: checked once, reported on every call.
  const agentHeadersProblem = headersProblem(agentOptions.headers, "the agent's")
  const unsendable = (options: CallOptions | undefined, input?: Input) =>
    agentHeadersProblem ?? optionsProblem(options) ?? (input === undefined ? undefined : inputProblem(input))

  const view = (operation: A2AClientError.Operation) =>
  (task: Task): Either.Either<RemoteOutcome.TaskView, A2AClientError.A2AClientError> => {
    const ids = { taskId: task.id, contextId: task.contextId }
    if (typeof task.id !== "string" || task.id === "") {
      return Either.left(clientCall.invalid(agent, operation, "the response holds a task without an id", ids))
    }
    const outcome = convert.taskOutcome(agent, task)
    if (Option.isSome(outcome)) return Either.right(outcome.value)
    const state = task.status?.state
    if (taskState.isRunning(state)) {
      const parts = (task.status?.message?.parts ?? []).map(wireParts.fromWirePart)
      return Either.right(
        wireParts.build(RemoteOutcome.Running, {
          agent,
          taskId: task.id,
          contextId: String(task.contextId ?? ""),
          state: state === TaskState.TASK_STATE_SUBMITTED ? "Submitted" : "Working",
          text: Part.textOf(parts),
          parts
        })
      )
    }
    return Either.left(clientCall.invalid(agent, operation, `the task is in an unrecognised state (${taskState.name(state)})`, ids))
  }

  const viewTask = view("GetTask")
  /**
   * One GetTask request of an exchange (a call of its own, or a poll of
   * another call). An answer about another task is no answer about this one.
   */
  const readTask = (exchange: clientCall.Exchange, taskId: string, ids: clientCall.Ids, done: clientCall.Done<RemoteOutcome.TaskView>) =>
    request(
      exchange,
      "GetTask",
      ids,
      (o) => client.getTask({ tenant: "", id: taskId }, o),
      (task) =>
        task.id === taskId
          ? viewTask(task)
          : Either.left(clientCall.invalid(agent, "GetTask", `asked for task ${taskId}, the answer is about task ${String(task.id)}`, ids)),
      done
    )
  const getTask = (taskId: string, options: CallOptions | undefined) =>
    operate<RemoteOutcome.TaskView>("GetTask", options, (exchange, done) => {
      const problem = unsendable(options)
      if (problem !== undefined) return done(Either.left(invalidRequest(agent, "GetTask", { taskId }, problem)))
      readTask(exchange, taskId, { taskId }, done)
    })

  /**
   * Polls a task that a call found unfinished (a blocking send's answer, or a
   * stream that ended while its task still ran), until it ends or the call's
   * time is up (the exchange's signal aborts then).
   */
  const awaitEnd = (
    operation: "SendMessage" | "SendStreamingMessage",
    exchange: clientCall.Exchange,
    running: RemoteOutcome.Running,
    done: clientCall.Done<RemoteOutcome.RemoteOutcome>
  ) => {
    const ids = { taskId: running.taskId, contextId: running.contextId }
    const timedOut = () =>
      new A2AClientError.A2AClientError({
        agent,
        operation,
        reason: "Timeout",
        delivery: "Unknown",
        detail: `task ${running.taskId} did not end within ${Duration.format(exchange.timeout)}`,
        ...ids
      })
    let delay = 25
    let timer: ReturnType<typeof setTimeout> | undefined
    const onAbort = () => {
      clearTimeout(timer)
      done(Either.left(timedOut()))
    }
    exchange.signal.addEventListener("abort", onAbort, { once: true })
    const finish: clientCall.Done<RemoteOutcome.RemoteOutcome> = (result) => {
      exchange.signal.removeEventListener("abort", onAbort)
      done(result)
    }
    const poll = () =>
      readTask(exchange, running.taskId, ids, (polled) =>
        Either.isRight(polled)
          ? next(polled.right)
          // The message was accepted: whatever a poll hits, the call's own delivery is not "NotSent",
          // and a refusal of the poll (429, 503 and its Retry-After) is not a refusal of the message.
          : finish(Either.left(
            new A2AClientError.A2AClientError({
              ...Struct.omit(polled.left, "status", "retryAfter"),
              operation,
              delivery: "Unknown",
              ...ids,
              detail: `task ${running.taskId} was accepted; polling it failed: ${polled.left.detail}`
            })
          )))
    const next = (current: RemoteOutcome.TaskView): void => {
      if (current._tag !== "Running") return finish(Either.right(current))
      const left = exchange.deadline - Date.now()
      if (left <= 0) return finish(Either.left(timedOut()))
      // The last poll leaves its answer time to come before the deadline; a poll due at the deadline (a
      // late timer) would only be aborted on its way. After the last one, the call's own timer ends it.
      const wait = Math.min(delay, left - pollAnswerMillis)
      if (wait <= 0) return
      timer = setTimeout(() => Date.now() >= exchange.deadline ? finish(Either.left(timedOut())) : poll(), wait)
      delay = Math.min(delay * 2, 1000)
    }
    next(running)
  }

  const viewSent = view("SendMessage")
  const send: RemoteAgent["send"] = (input, options) =>
    operate<RemoteOutcome.RemoteOutcome>("SendMessage", options, (exchange, done) => {
      const problem = unsendable(options, input)
      if (problem !== undefined) return done(Either.left(invalidRequest(agent, "SendMessage", inputIds(input), problem)))
      const message = messageOf(input, options)
      request(
        exchange,
        "SendMessage",
        { contextId: message.contextId, taskId: message.taskId },
        (o) => client.sendMessage({ tenant: "", message, configuration: undefined, metadata: undefined }, o),
        (result) => isMessage(result) ? Either.right(convert.messageOutcome(agent, result)) : viewSent(result),
        (result) =>
          Either.isRight(result) && result.right._tag === "Running"
            ? awaitEnd("SendMessage", exchange, result.right, done)
            : done(result as Either.Either<RemoteOutcome.RemoteOutcome, A2AClientError.A2AClientError>)
      )
    })

  const viewStreamed = view("SendStreamingMessage")
  const observeStream = (events: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>) =>
    events.pipe(
      Stream.tap((event) => event._tag === "Finished" ? reportStream(Either.right(event.outcome)) : Effect.void),
      Stream.tapError((error) => reportStream(Either.left(error))),
      Stream.withSpan("RemoteAgent.stream", { attributes: { "a2a.agent": agent }, kind: "client", captureStackTrace: false })
    )
  const stream: RemoteAgent["stream"] = (input, options) =>
    Stream.suspend(() => {
      const problem = unsendable(options, input)
      if (problem !== undefined) {
        return observeStream(Stream.fail(invalidRequest(agent, "SendStreamingMessage", inputIds(input), problem)))
      }
      const message = messageOf(input, options)
      const state = {
        taskId: message.taskId,
        contextId: message.contextId,
        started: false,
        finished: false,
        // The task this stream's events are of, from the first that names one.
        followed: "",
        // Each artifact as received so far; its parts grow in place as chunks append, built once at the end.
        artifacts: new Map<string, { artifactId: string; name: string; description: string; parts: Array<Part.Part> }>()
      }
      const ids = () => ({ taskId: state.taskId, contextId: state.contextId })
      // An event of another task is not part of this call's answer: folding it in would mix two tasks' results.
      const otherTask = (taskId: string | undefined): A2AClientError.A2AClientError | undefined => {
        if (!taskId) return undefined
        if (state.followed === "") state.followed = taskId
        return taskId === state.followed
          ? undefined
          : clientCall.invalid(agent, "SendStreamingMessage", `an event of task ${taskId} in the stream of task ${state.followed}`, ids())
      }
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
            const other = otherTask(payload.value.id)
            if (other !== undefined) return Effect.fail(other)
            state.taskId = payload.value.id || state.taskId
            state.contextId = payload.value.contextId || state.contextId
            for (const artifact of payload.value.artifacts ?? []) {
              const received = wireParts.fromWireArtifact(artifact)
              state.artifacts.set(received.artifactId, { ...received, parts: [...received.parts] })
            }
            return Either.map(viewStreamed(payload.value), (v) =>
              v._tag === "Running"
                ? [RemoteEvent.Status.make({ agent, taskId: v.taskId, contextId: v.contextId, state: v.state, text: v.text, parts: v.parts })]
                : finish(v))
          }
          case "statusUpdate": {
            const update = payload.value
            const other = otherTask(update.taskId)
            if (other !== undefined) return Effect.fail(other)
            state.taskId = update.taskId || state.taskId
            state.contextId = update.contextId || state.contextId
            const status = update.status
            const outcome = convert.outcomeOf(agent, state.taskId, state.contextId, status?.state, status?.message, [
              ...Array.from(state.artifacts.values(), (artifact) => wireParts.build(Part.Artifact, artifact))
            ])
            if (Option.isSome(outcome)) return Effect.succeed(finish(outcome.value))
            if (!taskState.isRunning(status?.state)) {
              return Effect.fail(
                clientCall.invalid(agent, "SendStreamingMessage", `status update in an unrecognised state (${taskState.name(status?.state)})`, ids())
              )
            }
            const parts = (status?.message?.parts ?? []).map(wireParts.fromWirePart)
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
              return Effect.fail(clientCall.invalid(agent, "SendStreamingMessage", "artifact update without an artifact", ids()))
            }
            const other = otherTask(update.taskId)
            if (other !== undefined) return Effect.fail(other)
            const chunk = wireParts.fromWireArtifact(update.artifact)
            const previous = state.artifacts.get(chunk.artifactId)
            // As the peer's task store joins them: a later chunk's name or description replaces the earlier one.
            if (update.append && previous !== undefined) {
              previous.name = chunk.name || previous.name
              previous.description = chunk.description || previous.description
              for (const part of chunk.parts) previous.parts.push(part)
            } else state.artifacts.set(chunk.artifactId, { ...chunk, parts: [...chunk.parts] })
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
            return Effect.fail(clientCall.invalid(agent, "SendStreamingMessage", "stream event without a payload", ids()))
        }
      }

      /**
       * A stream that ended or was cut before a final state: ask for the
       * task's real state. A task that still runs (its agent's turn ended
       * before it did, or the card offers no streaming and the SDK sent one
       * blocking call) is polled until it ends, as a send's is, within the
       * call's time; after a silence that reached that time, it is not waited
       * for again. Only once this stream has had an event: a task id the
       * caller gave (a continuation) says nothing of whether this message was
       * received.
       */
      const recover = (error: A2AClientError.A2AClientError): Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError> => {
        const recoverable = error.reason === "StreamInterrupted" || error.reason === "ConnectionLost" ||
          (error.reason === "Timeout" && error.delivery === "Unknown")
        if (!recoverable || !state.started || state.taskId === "") return Stream.fail(error)
        const taskId = state.taskId
        const ended = operate<RemoteOutcome.RemoteOutcome>(
          "SendStreamingMessage",
          options,
          (exchange, done) =>
            readTask(exchange, taskId, ids(), (polled) => {
              // A failed look at the task says less than the stream's own error.
              if (Either.isLeft(polled)) return done(Either.left(error))
              const view = polled.right
              if (view._tag !== "Running") return done(Either.right(view))
              return error.reason === "Timeout" ? done(Either.left(error)) : awaitEnd("SendStreamingMessage", exchange, view, done)
            }),
          false
        )
        return Stream.fromEffect(Effect.map(ended, (outcome) => RemoteEvent.Finished.make({ outcome })))
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
            { signal: controller.signal, serviceParameters: clientCall.callHeaders(span, options) }
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
      return observeStream(events)
    })

  const viewCanceled = view("CancelTask")
  const agentService: RemoteAgent = {
    name: agent,
    url: agentOptions.url,
    card: Option.some(card),
    send,
    stream,
    getTask,
    cancel: (taskId, o) =>
      operate<RemoteOutcome.TaskView>("CancelTask", o, (exchange, done) => {
        const problem = unsendable(o)
        if (problem !== undefined) return done(Either.left(invalidRequest(agent, "CancelTask", { taskId }, problem)))
        request(exchange, "CancelTask", { taskId }, (ro) => client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, ro), viewCanceled, done)
      })
  }
  return agentService
}

/**
 * An agent whose card could not be resolved at start-up: every call fails
 * with reason `Unavailable`, delivery `NotSent`, explaining why.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { AgentCardResolutionError, RemoteAgent } from "effect-a2a"
 *
 * // a test layer for the degraded path: every call fails with reason "Unavailable"
 * const BookingDown = Layer.succeed(RemoteAgent.RemoteAgent, RemoteAgent.unavailable(
 *   new AgentCardResolutionError.AgentCardResolutionError({ agent: "booking", url: "http://127.0.0.1:8000", reason: "Unreachable", detail: "connect ECONNREFUSED" })
 * ))
 * ```
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
  const errorCounter = clientCall.counter("a2a.client_error", cause.agent, { reason: "Unavailable" })
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
    const resolve = async (signal: AbortSignal) => {
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
    }
    return yield* Effect.tryPromise({
      try: async (interrupt) => {
        // Not `AbortSignal.any([interrupt, AbortSignal.timeout(…)])`: on Node 20 a garbage collection can
        // drop that timeout before it fires, and a card whose body stalls then hangs the start-up.
        const controller = new AbortController()
        const onInterrupt = () => controller.abort(interrupt.reason)
        interrupt.addEventListener("abort", onInterrupt, { once: true })
        const timer = setTimeout(
          () => controller.abort(new DOMException("The card was not resolved in time", "TimeoutError")),
          Math.min(cardMillis, clientCall.maxTimerMillis)
        )
        try {
          return await resolve(controller.signal)
        } finally {
          clearTimeout(timer)
          interrupt.removeEventListener("abort", onInterrupt)
        }
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
        Metric.update(clientCall.counter("a2a.card_resolution_error", options.name, { reason: error.reason }), 1)
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
