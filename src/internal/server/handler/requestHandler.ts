/**
 * The server's request handler: every A2A operation as an Effect (a stream
 * as a `Stream`), over the `TaskStore` service and the channels of the
 * tasks with a run in progress (see `channel.ts`). It keeps every check the
 * SDK's `DefaultRequestHandler` makes and answers as it answers; the SDK's
 * transports call it through `sdkHandler.ts`.
 *
 * A run's events are appended to the store before anyone is handed them:
 * what a caller or subscriber has, GetTask shows, and a run's end is in the
 * store once its run ends (the executor waits for its final event's append).
 *
 * @internal
 */
import {
  type AgentCard,
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type GetTaskRequest,
  type ListTaskPushNotificationConfigsResponse,
  type ListTasksRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  type TaskPushNotificationConfig,
  TaskState
} from "@a2a-js/sdk"
import {
  A2AError,
  ExtendedAgentCardNotConfiguredError,
  ExtensionSupportRequiredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError
} from "@a2a-js/sdk/errors"
import {
  AgentEvent,
  type AgentExecutionEvent,
  type AgentExecutor as SdkAgentExecutor,
  InMemoryPushNotificationStore,
  type PushNotificationStore,
  RequestContext,
  type ServerCallContext
} from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import type { TaskStoreError } from "../../serverErrors.js"
import * as ErrorId from "../../wire/errorId.js"
import * as wireParts from "../../wire/parts.js"
import type * as taskFold from "../../wire/taskFold.js"
import * as taskState from "../../wire/taskState.js"
import { streamResponseOf } from "../run/busTap.js"
import * as internalFailure from "../run/failure.js"
import { TaskStore } from "../store/store.js"
import type * as internalChannel from "./channel.js"

/** What an operation fails with: an A2A error, as the transports answer it, or an internal one (-32603). */
export type Failure = A2AError | Error

/** @internal */
export interface RequestHandler {
  readonly agentCard: Effect.Effect<AgentCard>
  readonly extendedAgentCard: (context: ServerCallContext) => Effect.Effect<AgentCard, Failure>
  readonly sendMessage: (
    params: SendMessageRequest,
    context: ServerCallContext
  ) => Effect.Effect<Message | Task, Failure>
  readonly sendMessageStream: (
    params: SendMessageRequest,
    context: ServerCallContext
  ) => Stream.Stream<StreamResponse, Failure>
  readonly getTask: (params: GetTaskRequest, context: ServerCallContext) => Effect.Effect<Task, Failure>
  readonly listTasks: (
    params: ListTasksRequest,
    context: ServerCallContext
  ) => Effect.Effect<ListTasksResponse, Failure>
  readonly cancelTask: (params: CancelTaskRequest, context: ServerCallContext) => Effect.Effect<Task, Failure>
  /** SubscribeToTask: the task, then its run's events until the run stops. */
  readonly resubscribe: (
    params: SubscribeToTaskRequest,
    context: ServerCallContext
  ) => Stream.Stream<StreamResponse, Failure>
  readonly createPushConfig: (
    params: TaskPushNotificationConfig,
    context: ServerCallContext
  ) => Effect.Effect<TaskPushNotificationConfig, Failure>
  readonly getPushConfig: (
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext
  ) => Effect.Effect<TaskPushNotificationConfig, Failure>
  readonly listPushConfigs: (
    params: { readonly taskId: string },
    context: ServerCallContext
  ) => Effect.Effect<ListTaskPushNotificationConfigsResponse, Failure>
  readonly deletePushConfig: (
    params: DeleteTaskPushNotificationConfigRequest,
    context: ServerCallContext
  ) => Effect.Effect<void, Failure>
}

/** @internal */
export const RequestHandler: Context.Tag<RequestHandler, RequestHandler> = Context.GenericTag<RequestHandler>(
  "effect-a2a/RequestHandler"
)

/** @internal */
export interface Options {
  readonly card: AgentCard
  /** Signed already, when signing is on: it is served as given. */
  readonly extendedCard: AgentCard | undefined
  readonly executor: SdkAgentExecutor
  readonly channels: internalChannel.Channels
  readonly pushStore: PushNotificationStore | undefined
  /** The id a new task of the call gets, when the server imposes one (idempotency); else a random one. */
  readonly taskIdFor?: ((context: ServerCallContext) => string | undefined) | undefined
  /** Hears each run's request context as it is built. */
  readonly onRequestContext?: ((requestContext: RequestContext) => void) | undefined
  /** How long a run's events are retried while the store refuses them. */
  readonly appendRetryMillis?: number | undefined
}

const defaultPageSize = 50
const validStates: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8])

/** `task` with `historyLength` applied, as a new object: the store's own is never changed. */
const withHistoryLength = (task: Task, historyLength: number | undefined): Task =>
  historyLength === undefined
    ? task
    : { ...task, history: historyLength <= 0 ? [] : (task.history ?? []).slice(-historyLength) }

const requireTaskId = (taskId: string | undefined): Effect.Effect<string, A2AError> =>
  !taskId || taskId.trim() === ""
    ? Effect.fail(new RequestMalformedError("Task ID is required"))
    : Effect.succeed(taskId)

/**
 * Whether a run stops for its caller at `event`: a bare message, an ended
 * task, or a question for input. An AUTH_REQUIRED task goes on: its answer
 * comes out of band.
 */
const stopsAt = (event: AgentExecutionEvent): boolean =>
  event.kind === "message" ||
  (event.kind === "statusUpdate" &&
    (taskState.isTerminal(event.data.status?.state) ||
      event.data.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED))

type Pattern = "undetermined" | "message" | "task"

/** The next shape of a stream after `event`: a message alone, or a task followed by its updates. */
const advance = (event: AgentExecutionEvent, pattern: Pattern): Pattern | UnsupportedOperationError => {
  switch (pattern) {
    case "undetermined":
      return event.kind === "message"
        ? "message"
        : event.kind === "task"
        ? "task"
        : new UnsupportedOperationError(`Received ${event.kind} before initial 'Message'/'Task' event.`)
    case "message":
      return new UnsupportedOperationError(`Received ${event.kind} after message-only response.`)
    case "task":
      return event.kind === "statusUpdate" || event.kind === "artifactUpdate"
        ? pattern
        : new UnsupportedOperationError(`Stream ordering violation: received ${event.kind} in task lifecycle stream.`)
  }
}

/** What a caller reads of an event: a task event as the store holds the task. */
const responseOf = (event: AgentExecutionEvent, task: Task | undefined, historyLength: number | undefined) =>
  event.kind === "task"
    ? ({ payload: { $case: "task", value: withHistoryLength(task ?? event.data, historyLength) } } as StreamResponse)
    : streamResponseOf(event)

const errorText = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : "Unknown error"

/** @internal */
export const make = (options: Options): Effect.Effect<RequestHandler, never, TaskStore> =>
  Effect.gen(function*() {
    const store = yield* TaskStore
    const runtime = yield* Effect.runtime<never>()
    const runPromise = Runtime.runPromise(runtime)
    const runFork = Runtime.runFork(runtime)
    const { card, channels, executor } = options
    const pushStore = card.capabilities?.pushNotifications
      ? options.pushStore ?? new InMemoryPushNotificationStore()
      : undefined

    // A store's failure is logged whole, under an id; the caller gets the id only.
    const internal = (what: string, taskId: string) => (error: TaskStoreError): Effect.Effect<never, Error> => {
      const errorId = ErrorId.make()
      return Effect.zipRight(
        internalFailure.logErrorOffSpan(`Task store ${what} failed`, {
          errorId,
          taskId,
          cause: internalFailure.renderCause(Cause.die(error.cause ?? error))
        }),
        Effect.fail(new Error(ErrorId.internalErrorText(errorId)))
      )
    }
    const load = (taskId: string, context: ServerCallContext) =>
      Effect.catchAll(store.get(taskId, context), internal("load", taskId))
    const found = (taskId: string, context: ServerCallContext) =>
      Effect.flatMap(
        load(taskId, context),
        (task) =>
          task === undefined ? Effect.fail(new TaskNotFoundError(`Task not found: ${taskId}`)) : Effect.succeed(task)
      )

    /** A run's events as its channel appends them: the caller's message joins a task that has none of it. */
    const appendOf = (taskId: string, context: ServerCallContext, userMessage: Message | undefined) => {
      const write = (events: ReadonlyArray<taskFold.TaskEvent>) =>
        Effect.catchAll(
          store.append(
            taskId,
            userMessage === undefined ? events : events.map((event) => withUserMessage(event, userMessage)),
            context
          ),
          internal("save", taskId)
        )
      return (events: ReadonlyArray<taskFold.TaskEvent>) => runPromise(write(events))
    }

    const openChannel = (taskId: string, context: ServerCallContext, userMessage: Message | undefined) =>
      channels.open(taskId, context, appendOf(taskId, context, userMessage), {
        retryMillis: options.appendRetryMillis ?? 30_000,
        gaveUp: (reason, error) =>
          runFork(
            Effect.logWarning(
              reason === "shutdown"
                ? "Could not persist the final task state before the server shut down: the task store was unavailable"
                : "Could not persist the final task state"
            ).pipe(Effect.annotateLogs({ taskId, cause: errorText(error) }))
          )
      }).channel

    // ---- SendMessage ----

    const requestContextOf = (params: SendMessageRequest, context: ServerCallContext) =>
      Effect.gen(function*() {
        // Checked by the caller: a send without a message is refused before.
        const message = params.message as Message
        const extensions = card.capabilities?.extensions ?? []
        const requested = new Set(context.requestedExtensions ?? [])
        const missing = extensions.filter((extension) => extension.required && !requested.has(extension.uri))
        if (missing.length > 0) {
          return yield* Effect.fail(
            new ExtensionSupportRequiredError(
              `Client must declare support for required extensions: ${
                missing.map((extension) => extension.uri).join(", ")
              }`
            )
          )
        }
        let task: Task | undefined
        if (message.taskId) {
          const stored = yield* Effect.flatMap(requireTaskId(message.taskId), (taskId) => found(taskId, context))
          const state = stored.status?.state
          if (taskState.isTerminal(state)) {
            return yield* Effect.fail(
              new UnsupportedOperationError(
                `Task ${stored.id} is in a terminal state (${state}) and cannot be modified.`
              )
            )
          }
          if (message.contextId && stored.contextId && message.contextId !== stored.contextId) {
            return yield* Effect.fail(
              new RequestMalformedError(
                `contextId mismatch: message contextId '${message.contextId}' does not match task '${stored.id}' contextId '${stored.contextId}'`
              )
            )
          }
          // The caller's message joins the task's history before its run sees the task.
          task = yield* Effect.catchAll(
            store.append(stored.id, [AgentEvent.message(message)], context),
            internal("save", stored.id)
          )
        }
        const taskId = message.taskId || options.taskIdFor?.(context) || randomUUID()
        let referenceTasks: Array<Task> | undefined
        if (message.referenceTaskIds.length > 0) {
          referenceTasks = []
          for (const referenceId of message.referenceTaskIds) {
            const reference = yield* load(referenceId, context)
            if (reference !== undefined) referenceTasks.push(reference)
          }
        }
        const contextId = message.contextId || task?.contextId || randomUUID()
        if (context.requestedExtensions) {
          const exposed = new Set(extensions.map((extension) => extension.uri))
          context.setRequestedExtensions(context.requestedExtensions.filter((uri) => exposed.has(uri)))
        }
        const requestContext = new RequestContext(
          { ...params, message: { ...message, contextId, taskId } },
          taskId,
          contextId,
          context,
          task,
          referenceTasks
        )
        options.onRequestContext?.(requestContext)
        const pushConfig = params.configuration?.taskPushNotificationConfig
        if (pushConfig !== undefined && pushStore !== undefined) {
          const config = structuredClone(pushConfig)
          config.taskId = taskId
          yield* Effect.promise(() => pushStore.save(taskId, context, config))
        }
        return requestContext
      })

    /**
     * Starts the run of `requestContext` on its task's channel, the follower
     * `follow` makes following it from its first event, which may come
     * before `execute` returns; it is given what stops following, which it
     * returns too. A run that throws ends its task FAILED, as the SDK's
     * handler ends it.
     */
    const run = (
      requestContext: RequestContext,
      follow: (unfollow: () => void) => internalChannel.Follower
    ): () => void => {
      const { context, contextId, taskId, userMessage } = requestContext
      const channel = openChannel(taskId, context, userMessage)
      let stopped = false
      // Set once followed: the follower may stop before that.
      const following: { off?: () => void } = {}
      const unfollow = () => {
        stopped = true
        following.off?.()
      }
      const follower = follow(unfollow)
      following.off = channel.follow({
        event: (event, task) => stopped ? undefined : follower.event(event, task),
        failed: (error) => stopped ? undefined : follower.failed(error),
        finished: () => stopped ? undefined : follower.finished()
      })
      let ran: Promise<void>
      try {
        ran = executor.execute(requestContext, channel)
      } catch (error) {
        ran = Promise.reject(error)
      }
      ran.catch((error: unknown) => {
        const failure = wireParts.agentMessage(taskId, contextId, [
          wireParts.textPart(`Agent execution error: ${errorText(error)}`)
        ])
        const status = { state: TaskState.TASK_STATE_FAILED, message: failure, timestamp: new Date().toISOString() }
        if (!channel.taskPublished) {
          const history = [...(requestContext.task?.history ?? [])]
          if (!history.some((known) => known.messageId === userMessage.messageId)) history.push(userMessage)
          channel.publish(AgentEvent.task({ id: taskId, contextId, status, artifacts: [], history, metadata: {} }))
        }
        channel.publish(AgentEvent.statusUpdate({ taskId, contextId, status, metadata: {} }))
      }).finally(() => channel.finished())
      return unfollow
    }

    const checkedMessage = (params: SendMessageRequest, streaming: boolean) =>
      params.message?.messageId
        ? Effect.void
        : Effect.fail(
          new RequestMalformedError(`message.messageId is required${streaming ? " for streaming" : ""}.`)
        )

    const sendMessage: RequestHandler["sendMessage"] = (params, context) =>
      Effect.zipRight(
        checkedMessage(params, false),
        Effect.flatMap(requestContextOf(params, context), (requestContext) => {
          const historyLength = params.configuration?.historyLength
          const blocking = params.configuration?.returnImmediately !== true
          return Effect.async<Message | Task, Failure>((resume) => {
            let current: Task | undefined
            let reply: Message | undefined
            let answered = false
            const answer = (result: Message | Task) => {
              if (answered) return
              answered = true
              resume(Effect.succeed("status" in result ? withHistoryLength(result, historyLength) : result))
            }
            const refuse = (error: Failure) => {
              if (answered) return
              answered = true
              resume(Effect.fail(error))
            }
            const end = (unfollow: () => void) => {
              unfollow()
              if (!blocking) {
                return refuse(new RequestMalformedError("Execution finished before a message or task was produced."))
              }
              const result = reply ?? current
              if (result === undefined) {
                return refuse(new A2AError("Agent execution finished without a result, and no task context found."))
              }
              answer(result)
            }
            const unfollow = run(requestContext, (unfollow) => ({
              event: (event, task) => {
                if (event.kind === "message") reply = event.data
                else if (task !== undefined) current = task
                if (!blocking) {
                  if (event.kind === "message") answer(event.data)
                  else if (current !== undefined) answer(current)
                } else if (
                  event.kind === "statusUpdate" && event.data.status?.state === TaskState.TASK_STATE_AUTH_REQUIRED &&
                  current !== undefined
                ) {
                  // Answered now: the credentials come out of band, and the run goes on in the store.
                  answer(current)
                }
                if (stopsAt(event)) end(unfollow)
              },
              failed: (error) => {
                unfollow()
                refuse(error instanceof A2AError || error instanceof Error ? error : new Error(errorText(error)))
              },
              finished: () => end(unfollow)
            }))
            return Effect.sync(unfollow)
          })
        })
      )

    const sendMessageStream: RequestHandler["sendMessageStream"] = (params, context) =>
      Stream.unwrap(
        Effect.gen(function*() {
          if (!card.capabilities?.streaming) {
            return yield* Effect.fail(new UnsupportedOperationError("Streaming is not supported."))
          }
          yield* checkedMessage(params, true)
          const requestContext = yield* requestContextOf(params, context)
          const historyLength = params.configuration?.historyLength
          return Stream.async<StreamResponse, Failure>((emit) => {
            let pattern: Pattern = "undetermined"
            const unfollow = run(requestContext, (unfollow) => ({
              event: (event, task) => {
                const next = advance(event, pattern)
                if (next instanceof UnsupportedOperationError) {
                  unfollow()
                  return void emit.fail(next)
                }
                pattern = next
                void emit.single(responseOf(event, task, historyLength))
                if (stopsAt(event)) {
                  unfollow()
                  void emit.end()
                }
              },
              failed: (error) => {
                unfollow()
                void emit.fail(error instanceof Error ? error : new Error(errorText(error)))
              },
              finished: () => void emit.end()
            }))
            return Effect.sync(unfollow)
          }, "unbounded")
        })
      )

    // ---- Tasks ----

    const getTask: RequestHandler["getTask"] = (params, context) =>
      Effect.flatMap(requireTaskId(params.id), (taskId) =>
        Effect.map(found(taskId, context), (task) => withHistoryLength(task, params.historyLength)))

    const listTasks: RequestHandler["listTasks"] = (params, context) =>
      Effect.suspend(() => {
        const pageSize = params.pageSize ?? defaultPageSize
        if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
          return Effect.fail(new RequestMalformedError("pageSize must be between 1 and 100"))
        }
        if (params.status !== undefined && !validStates.has(params.status)) {
          return Effect.fail(new RequestMalformedError(`Invalid status filter: ${String(params.status)}`))
        }
        if (params.statusTimestampAfter && isNaN(Date.parse(params.statusTimestampAfter))) {
          return Effect.fail(new RequestMalformedError("statusTimestampAfter must be a valid ISO 8601 date string"))
        }
        return Effect.map(
          Effect.catchAll(store.list({ ...params, pageSize }, context), internal("list", "")),
          (response) => ({
            ...response,
            tasks: response.tasks.map((task) =>
              withHistoryLength(task, params.historyLength)
            )
          })
        )
      })

    /** Follows `channel` until its run stops; `start` runs once followed. */
    const untilStopped = (channel: internalChannel.Channel, start: () => Promise<void>) =>
      Effect.async<void>((resume) => {
        let stopped = false
        let unfollow = () => {}
        const done = () => {
          if (stopped) return
          stopped = true
          unfollow()
          resume(Effect.void)
        }
        const off = channel.follow({
          event: (event) => {
            if (stopsAt(event)) done()
          },
          failed: done,
          finished: done
        })
        if (stopped) off()
        else unfollow = off
        start().catch(done)
        return Effect.sync(() => unfollow())
      })

    const cancelTask: RequestHandler["cancelTask"] = (params, context) =>
      Effect.gen(function*() {
        const taskId = yield* requireTaskId(params.id)
        const task = yield* found(taskId, context)
        const state = task.status?.state
        if (state === TaskState.TASK_STATE_CANCELED) return task
        if (taskState.isTerminal(state)) {
          return yield* Effect.fail(new TaskNotCancelableError(`Task not cancelable: ${params.id}`))
        }
        const channel = channels.get(taskId, context)
        if (channel !== undefined) {
          yield* untilStopped(channel, () => executor.cancelTask(taskId, channel))
        } else {
          // No run to stop (the task is paused): the cancel is the task's event, told to its subscribers.
          const canceling = openChannel(taskId, context, undefined)
          canceling.publish(AgentEvent.statusUpdate({
            taskId,
            contextId: task.contextId,
            status: {
              state: TaskState.TASK_STATE_CANCELED,
              message: wireParts.agentMessage(taskId, task.contextId, [
                wireParts.textPart("Task cancellation requested by user.")
              ]),
              timestamp: new Date().toISOString()
            },
            metadata: {}
          }))
          canceling.finished()
          yield* Effect.promise(() => canceling.appended())
        }
        const latest = yield* load(taskId, context)
        if (latest === undefined) {
          return yield* Effect.fail(new A2AError(`Task ${params.id} not found after cancellation.`))
        }
        if (latest.status?.state !== TaskState.TASK_STATE_CANCELED) {
          return yield* Effect.fail(new TaskNotCancelableError(`Task not cancelable: ${params.id}`))
        }
        return latest
      })

    const resubscribe: RequestHandler["resubscribe"] = (params, context) =>
      Stream.unwrap(Effect.gen(function*() {
        if (!card.capabilities?.streaming) {
          return yield* Effect.fail(
            new UnsupportedOperationError("Streaming (and thus resubscription) is not supported.")
          )
        }
        const taskId = yield* requireTaskId(params.id)
        const channel = channels.get(taskId, context)
        // Followed before the task is read: nothing the run appends in between is missed.
        const queued: Array<AgentExecutionEvent> = []
        let wake: (() => void) | undefined
        let ended = channel === undefined
        const unfollow = channel?.follow({
          event: (event) => {
            queued.push(event)
            wake?.()
          },
          failed: () => {
            ended = true
            wake?.()
          },
          finished: () => {
            ended = true
            wake?.()
          }
        }) ?? (() => {})
        const task = yield* Effect.onError(found(taskId, context), () => Effect.sync(unfollow))
        const state = task.status?.state
        if (taskState.isTerminal(state)) {
          unfollow()
          return yield* Effect.fail(
            new UnsupportedOperationError(
              `Task ${taskId} is in a terminal state (${state}) and cannot be subscribed to.`
            )
          )
        }
        const first = Stream.succeed<StreamResponse>({ payload: { $case: "task", value: task } })
        if (channel === undefined) return first
        const later = Stream.async<StreamResponse>((emit) => {
          const drain = () => {
            for (let event = queued.shift(); event !== undefined; event = queued.shift()) {
              const own = event.kind === "task"
                ? event.data.id === taskId
                : event.kind !== "message" && event.data.taskId === taskId
              if (own) void emit.single(streamResponseOf(event))
              if (stopsAt(event)) {
                unfollow()
                return void emit.end()
              }
            }
            if (ended) {
              unfollow()
              void emit.end()
            }
          }
          wake = drain
          drain()
          return Effect.sync(unfollow)
        }, "unbounded")
        return Stream.concat(first, Stream.ensuring(later, Effect.sync(unfollow)))
      }))

    // ---- Push configs and cards ----

    const pushConfigs = <A>(
      taskId: string | undefined,
      context: ServerCallContext,
      use: (store: PushNotificationStore, taskId: string) => Promise<A>
    ): Effect.Effect<A, Failure> =>
      Effect.gen(function*() {
        if (pushStore === undefined) return yield* Effect.fail(new PushNotificationNotSupportedError())
        const id = yield* requireTaskId(taskId)
        yield* found(id, context)
        return yield* Effect.promise(() => use(pushStore, id))
      })

    return {
      agentCard: Effect.succeed(card),
      extendedAgentCard: (context) =>
        !card.capabilities?.extendedAgentCard
          ? Effect.fail(new UnsupportedOperationError("Agent does not support authenticated extended card."))
          : options.extendedCard === undefined
          ? Effect.fail(new ExtendedAgentCardNotConfiguredError())
          : Effect.succeed(context.user?.isAuthenticated ? options.extendedCard : card),
      sendMessage,
      sendMessageStream,
      getTask,
      listTasks,
      cancelTask,
      resubscribe,
      createPushConfig: (params, context) =>
        pushConfigs(params.taskId, context, async (configs, taskId) => {
          await configs.save(taskId, context, params)
          return structuredClone(params)
        }),
      getPushConfig: (params, context) =>
        Effect.flatMap(
          pushConfigs(params.taskId, context, (configs, taskId) => configs.load(taskId, context)),
          (configs) => {
            if (configs.length === 0) {
              return Effect.fail(new TaskNotFoundError(`Push notification config not found for task ${params.taskId}.`))
            }
            const config = configs.find((known) => known.id === params.id)
            return config === undefined
              ? Effect.fail(
                new TaskNotFoundError(
                  `Push notification config with id '${params.id}' not found for task ${params.taskId}.`
                )
              )
              : Effect.succeed(config)
          }
        ),
      listPushConfigs: (params, context) =>
        pushConfigs(params.taskId, context, async (configs, taskId) => ({
          configs: await configs.load(taskId, context),
          nextPageToken: ""
        })),
      deletePushConfig: (params, context) =>
        pushConfigs(params.taskId, context, (configs, taskId) => configs.delete(taskId, context, params.id))
    }
  })

/** A task event of a send: the caller's message is in the task's history, first if it was missing. */
const withUserMessage = (event: taskFold.TaskEvent, userMessage: Message): taskFold.TaskEvent => {
  if (event.kind !== "task") return event
  const history = event.data.history ?? []
  return history.some((known) => known.messageId === userMessage.messageId)
    ? event
    : AgentEvent.task({ ...event.data, history: [userMessage, ...history] })
}
