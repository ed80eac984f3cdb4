/**
 * The streams of a task's events, a streaming send's and a subscription's
 * (`SubscribeToTask`): their events, folded into what the stream has told so
 * far, and their recovery when one is cut before the task ends.
 *
 * @internal
 */
import type {
  SendMessageConfiguration,
  StreamResponse,
  TaskArtifactUpdateEvent,
  TaskStatusUpdateEvent
} from "@a2a-js/sdk"
import type { RequestOptions } from "@a2a-js/sdk/client"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import type * as A2AClientError from "../../../A2AClientError.js"
import * as Part from "../../../Part.js"
import type { CallOptions, RemoteAgent } from "../../../RemoteAgent.js"
import * as RemoteEvent from "../../../RemoteEvent.js"
import type * as RemoteOutcome from "../../../RemoteOutcome.js"
import * as EventId from "../../wire/eventId.js"
import * as wireParts from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import * as clientCall from "./call.js"
import { type CallRecord, classifyCall } from "./classify.js"
import { inputIds, invalidRequest, messageOf } from "./input.js"
import * as outcomes from "./outcome.js"
import type { AwaitEnd } from "./send.js"
import { abandoned, type AgentContext, cancelsOnInterrupt, makeAbandon, type ReadTask, view } from "./task.js"

type Events = Effect.Effect<ReadonlyArray<RemoteEvent.RemoteEvent>, A2AClientError.A2AClientError>

type View = ReturnType<typeof view>

/** The operations that answer with a stream of a task's events. @internal */
export type StreamOperation = "SendStreamingMessage" | "SubscribeToTask"

/** What a stream's events have told so far; a push receiver keeps one per task. @internal */
export interface State {
  readonly operation: StreamOperation
  taskId: string
  contextId: string
  started: boolean
  finished: boolean
  // The task this stream's events are of, from the first that names one.
  followed: string
  // The place of the last event seen in its task's event log, when the server numbers them: where a cut stream resumes.
  seq: number | undefined
  // Each artifact as received so far; its parts grow in place as chunks append, built once at the end.
  readonly artifacts: Map<string, { artifactId: string; name: string; description: string; parts: Array<Part.Part> }>
}

const idsOf = (state: State): clientCall.Ids => ({ taskId: state.taskId, contextId: state.contextId })

// An event of another task is not part of this call's answer: folding it in would mix two tasks' results.
const otherTask = (
  agent: string,
  state: State,
  taskId: string | undefined
): A2AClientError.A2AClientError | undefined => {
  if (!taskId) return undefined
  if (state.followed === "") state.followed = taskId
  return taskId === state.followed
    ? undefined
    : clientCall.invalid(
      agent,
      state.operation,
      `an event of task ${taskId} in the stream of task ${state.followed}`,
      idsOf(state)
    )
}

const finish = (state: State, outcome: RemoteOutcome.RemoteOutcome) => {
  state.finished = true
  return [RemoteEvent.Finished.make({ outcome })]
}

const statusEvents = (agent: string, state: State, update: TaskStatusUpdateEvent): Events => {
  const other = otherTask(agent, state, update.taskId)
  if (other !== undefined) return Effect.fail(other)
  state.taskId = update.taskId || state.taskId
  state.contextId = update.contextId || state.contextId
  const status = update.status
  const outcome = outcomes.outcomeOf(agent, state.taskId, state.contextId, status?.state, status?.message, [
    ...Array.from(state.artifacts.values(), (artifact) => wireParts.build(Part.Artifact, artifact))
  ])
  if (Option.isSome(outcome)) return Effect.succeed(finish(state, outcome.value))
  if (!taskState.isRunning(status?.state)) {
    return Effect.fail(
      clientCall.invalid(
        agent,
        state.operation,
        `status update in an unrecognised state (${taskState.name(status?.state)})`,
        idsOf(state)
      )
    )
  }
  const parts = wireParts.fromWireParts(status?.message?.parts)
  return Effect.succeed([
    RemoteEvent.Status.make({
      agent,
      taskId: state.taskId,
      contextId: state.contextId,
      state: taskState.runningState(status?.state),
      text: Part.textOf(parts),
      parts
    })
  ])
}

const artifactEvents = (agent: string, state: State, update: TaskArtifactUpdateEvent): Events => {
  if (update.artifact === undefined) {
    return Effect.fail(clientCall.invalid(agent, state.operation, "artifact update without an artifact", idsOf(state)))
  }
  const other = otherTask(agent, state, update.taskId)
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

/** A stream's state before its first event. @internal */
export const initialState = (
  operation: StreamOperation,
  ids: { readonly taskId: string; readonly contextId: string }
): State => ({
  operation,
  ...ids,
  started: false,
  finished: false,
  followed: "",
  seq: undefined,
  artifacts: new Map()
})

/** The events one stream response makes, folded into `state`: a stream's, or a pushed notification's. @internal */
export const toEvents = (agent: string, viewStreamed: View, state: State, response: StreamResponse): Events => {
  state.started = true
  state.seq = EventId.sequenceOf(response) ?? state.seq
  const payload = response.payload
  switch (payload?.$case) {
    case "message":
      return Effect.succeed(finish(state, outcomes.messageOutcome(agent, payload.value)))
    case "task": {
      const other = otherTask(agent, state, payload.value.id)
      if (other !== undefined) return Effect.fail(other)
      state.taskId = payload.value.id || state.taskId
      state.contextId = payload.value.contextId || state.contextId
      for (const artifact of payload.value.artifacts ?? []) {
        const received = wireParts.fromWireArtifact(artifact)
        state.artifacts.set(received.artifactId, { ...received, parts: [...received.parts] })
      }
      return Either.map(viewStreamed(payload.value), (v) =>
        v._tag === "Running"
          ? [
            RemoteEvent.Status.make({
              agent,
              taskId: v.taskId,
              contextId: v.contextId,
              state: v.state,
              text: v.text,
              parts: v.parts
            })
          ]
          : finish(state, v))
    }
    case "statusUpdate":
      return statusEvents(agent, state, payload.value)
    case "artifactUpdate":
      return artifactEvents(agent, state, payload.value)
    default:
      return Effect.fail(clientCall.invalid(agent, state.operation, "stream event without a payload", idsOf(state)))
  }
}

/** The span of the caller, if any: a stream's span, or the user's. */
const contextSpan: Effect.Effect<Tracer.AnySpan | undefined> = Effect.withFiberRuntime((fiber) =>
  Effect.succeed(clientCall.tracedSpan(fiber))
)

/**
 * The events of one stream, folded into `state`, until its task ends; a
 * stream that ends before fails.
 */
const events = (
  context: AgentContext,
  viewStreamed: View,
  state: State,
  open: (options: RequestOptions) => AsyncGenerator<StreamResponse, void, undefined>,
  options: CallOptions | undefined
): Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError> => {
  const { agent, track } = context
  const operation = state.operation
  const idle = Duration.decode(options?.timeout ?? context.timeout)
  const record: { current?: CallRecord } = {}
  const { agentHeaders, binding } = context.engine
  const sent: { parameters?: Record<string, string> } = {}
  return Stream.acquireRelease(
    Effect.sync(() => new AbortController()),
    (controller) =>
      Effect.sync(() => {
        controller.abort()
        if (sent.parameters !== undefined) binding.release?.(sent.parameters)
      })
  ).pipe(
    Stream.zip(Stream.fromEffect(contextSpan)),
    Stream.flatMap(([controller, span]) => {
      const current = record.current = track(controller.signal)
      const parameters = sent.parameters = binding.parameters(
        current,
        clientCall.callHeaders(span, options, agentHeaders)
      )
      const generator = open({ signal: controller.signal, serviceParameters: parameters })
      // Whether this stream had an event: a resumed one that is refused before its first was refused, not cut.
      let received = false
      // `return()` on a generator waits for its pending `next()`; abort first so that it settles.
      const iterable: AsyncIterable<StreamResponse> = {
        [Symbol.asyncIterator]: () => ({
          next: () =>
            generator.next().then((result) => {
              received ||= result.done !== true
              return result
            }),
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
            binding: context.engine.binding,
            signal: controller.signal,
            operation,
            record: record.current,
            streamStarted: received,
            ...idsOf(state)
          })
      )
    }),
    Stream.timeoutFail(
      () =>
        clientCall.callError(
          agent,
          operation,
          "Timeout",
          record.current?.sent === false ? "NotSent" : "Unknown",
          `no stream event within ${Duration.format(idle)}`,
          idsOf(state)
        ),
      idle
    ),
    Stream.mapEffect((response) => toEvents(agent, viewStreamed, state, response)),
    Stream.flattenIterables,
    Stream.takeUntil((event) => event._tag === "Finished"),
    Stream.concat(
      Stream.suspend(() =>
        state.finished
          ? Stream.empty
          : Stream.fail(
            clientCall.callError(
              agent,
              operation,
              "StreamInterrupted",
              "Unknown",
              "the stream ended before the task reached a final state",
              idsOf(state)
            )
          )
      )
    )
  )
}

/** The responses after the `seq`-th: an event a server sends again is not shown twice. */
async function* after(seq: number, responses: AsyncGenerator<StreamResponse, void, undefined>) {
  for await (const response of responses) {
    if ((EventId.sequenceOf(response) ?? Infinity) > seq) yield response
  }
}

/** A stream cut, or lost before its first event: what a resume takes up. */
const isCut = (error: A2AClientError.A2AClientError): boolean =>
  error.reason === "StreamInterrupted" || error.reason === "ConnectionLost"

/** A stream silent for the call's time, after its request went out. */
const silent = (error: A2AClientError.A2AClientError): boolean =>
  error.reason === "Timeout" && error.delivery === "Unknown"

/** How many times one call's stream resumes, in all, before it looks its task up instead. */
const maxResumes = 5

/** The wait before the `attempt`-th resume (the second and later): 100 ms, doubling. */
const resumeBackoff = (attempt: number): Duration.Duration => Duration.millis(100 * 2 ** (attempt - 2))

/** The streams of an agent: a streaming send, and a subscription to a task. @internal */
export const make = (context: AgentContext, readTask: ReadTask, awaitEnd: AwaitEnd) => {
  const { agent, client, unsendable } = context
  const { operate, reportStream } = context.engine
  const views = {
    SendStreamingMessage: view(agent, "SendStreamingMessage"),
    SubscribeToTask: view(agent, "SubscribeToTask")
  }
  const spanNames = { SendStreamingMessage: "RemoteAgent.stream", SubscribeToTask: "RemoteAgent.resubscribe" }
  const abandon = makeAbandon(context)
  const observeStream = (
    operation: StreamOperation,
    events: Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError>
  ) =>
    events.pipe(
      // Errors made here rather than classified (an idle time-out, a bad event) learn the transport now.
      Stream.mapError((error) => clientCall.withTransport(error, context.engine.binding)),
      Stream.tap((event) =>
        event._tag === "Finished" ? reportStream(operation, Either.right(event.outcome)) : Effect.void
      ),
      Stream.tapError((error) => reportStream(operation, Either.left(error))),
      Stream.withSpan(spanNames[operation], {
        attributes: { "a2a.agent": agent, "a2a.transport": context.engine.binding.transport },
        kind: "client",
        captureStackTrace: false
      })
    )

  /**
   * A stream that ended or was cut before a final state: ask for the
   * task's real state. A task that still runs (its agent's turn ended
   * before it did, or the card offers no streaming and the SDK sent one
   * blocking call) is polled until it ends, as a send's is, within the
   * call's time; after a silence that reached that time, it is not waited
   * for again.
   */
  const lookUp = (state: State, options: CallOptions | undefined, error: A2AClientError.A2AClientError) => {
    const taskId = state.taskId
    const ended = operate<RemoteOutcome.RemoteOutcome>(
      state.operation,
      options,
      (exchange, done) =>
        readTask(exchange, taskId, idsOf(state), (polled) => {
          // A failed look at the task says less than the stream's own error.
          if (Either.isLeft(polled)) return done(Either.left(error))
          const view = polled.right
          if (view._tag !== "Running") return done(Either.right(view))
          return error.reason === "Timeout" ? done(Either.left(error)) : awaitEnd(state.operation, exchange, view, done)
        }),
      false
    )
    // Finished here too: a cancel on interruption must not follow a task this stream saw end.
    return Stream.fromIterableEffect(Effect.map(ended, (outcome) => finish(state, outcome)))
  }

  /**
   * A stream cut after its `state.seq`-th event, resumed right after it: a
   * `SubscribeToTask` with the cursor, whose events (only later ones, no
   * Task first) fold into the same state, so the caller sees each event
   * once. Cut again, it resumes again, `maxResumes` times in all, then
   * looks the task up as an agent without the extension does; so does a
   * resume the server refuses before its first event. A silence is not a
   * cut: it looks the task up, as the call's time has passed.
   */
  const resume = (
    state: State,
    options: CallOptions | undefined,
    cut: A2AClientError.A2AClientError,
    attempt: number
  ): Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError> => {
    const taskId = state.taskId
    const seq = state.seq ?? 0
    const cursor: CallOptions = { ...options, headers: { ...options?.headers, [EventId.cursorHeader]: String(seq) } }
    let resumed = false
    const again = events(
      context,
      views[state.operation],
      state,
      (requestOptions) => after(seq, client.resubscribeTask({ tenant: "", id: taskId }, requestOptions)),
      cursor
    ).pipe(
      Stream.tap(() => Effect.sync(() => (resumed = true))),
      Stream.catchAll((error) =>
        isCut(error)
          ? attempt < maxResumes ? resume(state, options, error, attempt + 1) : lookUp(state, options, error)
          : silent(error)
          ? lookUp(state, options, error)
          : resumed
          ? Stream.fail(error)
          : lookUp(state, options, cut)
      )
    )
    // The first at once; a replica that is going away may take the next ones too.
    return attempt === 1 ? again : Stream.unwrap(Effect.as(Effect.sleep(resumeBackoff(attempt)), again))
  }

  /**
   * A stream that ended or was cut before a final state: resumed after its
   * last event where the card declares the extension and the events are
   * numbered, else looked up. Only once this stream has had an event: a
   * task id the caller gave (a continuation) says nothing of whether this
   * message was received.
   */
  const recover =
    (state: State, options: CallOptions | undefined) =>
    (error: A2AClientError.A2AClientError): Stream.Stream<RemoteEvent.RemoteEvent, A2AClientError.A2AClientError> => {
      const recoverable = isCut(error) || silent(error)
      if (!recoverable || !state.started || state.taskId === "") return Stream.fail(error)
      return context.resumable && state.seq !== undefined && isCut(error)
        ? resume(state, options, error, 1)
        : lookUp(state, options, error)
    }

  /** The events of `open`, for a stream whose state starts as `ids`, recovered when cut. */
  const streamOf = (
    operation: StreamOperation,
    ids: { readonly taskId: string; readonly contextId: string },
    open: (requestOptions: RequestOptions) => AsyncGenerator<StreamResponse, void, undefined>,
    options: CallOptions | undefined
  ) => {
    const state = initialState(operation, ids)
    const recovered = events(context, views[operation], state, open, options).pipe(
      Stream.catchAll(recover(state, options))
    )
    return observeStream(
      operation,
      cancelsOnInterrupt(context, options)
        // The task is known from an event that named it, not from the caller's input; `finished` once one ended it.
        ? Stream.ensuringWith(
          recovered,
          (exit) =>
            state.followed !== "" && !state.finished && abandoned(exit) ? abandon(state.followed, options) : Effect.void
        )
        : recovered
    )
  }

  /** A streaming send with `configuration` (a push config). */
  const streamWith = (
    input: Parameters<RemoteAgent["stream"]>[0],
    options: Parameters<RemoteAgent["stream"]>[1],
    configuration: SendMessageConfiguration | undefined
  ) =>
    Stream.suspend(() => {
      const problem = unsendable(options, input)
      if (problem !== undefined) {
        return observeStream(
          "SendStreamingMessage",
          Stream.fail(invalidRequest(agent, "SendStreamingMessage", inputIds(input), problem))
        )
      }
      const message = messageOf(input, options)
      return streamOf(
        "SendStreamingMessage",
        { taskId: message.taskId, contextId: message.contextId },
        (requestOptions) =>
          client.sendMessageStream({ tenant: "", message, configuration, metadata: undefined }, requestOptions),
        options
      )
    })

  const resubscribe: RemoteAgent["resubscribe"] = (taskId, options) =>
    Stream.suspend(() => {
      const problem = unsendable(options)
      if (problem !== undefined) {
        return observeStream(
          "SubscribeToTask",
          Stream.fail(invalidRequest(agent, "SubscribeToTask", { taskId }, problem))
        )
      }
      return streamOf("SubscribeToTask", { taskId, contextId: "" }, (requestOptions) =>
        client.resubscribeTask({ tenant: "", id: taskId }, requestOptions), options)
    })

  const stream: RemoteAgent["stream"] = (input, options) => streamWith(input, options, undefined)

  return { stream, resubscribe, streamWith }
}

/** A streaming send with a configuration. @internal */
export type StreamWith = ReturnType<typeof make>["streamWith"]
