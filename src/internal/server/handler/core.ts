/**
 * What the request handler's operations share: its options and types, the
 * task store as they read it (a failure logged under an error id, the caller
 * given the id only), and the channel a run's events go through.
 *
 * @internal
 */
import {
  type AgentCard,
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type GetTaskRequest,
  type ListTaskPushNotificationConfigsRequest,
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
import { type A2AError, RequestMalformedError, TaskNotFoundError } from "@a2a-js/sdk/errors"
import {
  AgentEvent,
  type AgentExecutionEvent,
  type AgentExecutor as SdkAgentExecutor,
  InMemoryPushNotificationStore,
  type PushNotificationStore,
  type RequestContext,
  type ServerCallContext
} from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type * as Stream from "effect/Stream"
import * as internalCauses from "../../observability/causes.js"
import type { TaskStoreError } from "../../serverErrors.js"
import * as ErrorId from "../../wire/errorId.js"
import type * as taskFold from "../../wire/taskFold.js"
import * as taskState from "../../wire/taskState.js"
import { TaskStore } from "../store/store.js"
import type * as internalChannel from "./channel.js"
import type * as internalRunStages from "./runStages.js"

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
    params: ListTaskPushNotificationConfigsRequest,
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
  /** What each concern does around a run: started in order, ended in reverse (see `runStages.ts`). */
  readonly runStages?: ReadonlyArray<internalRunStages.RunStage> | undefined
}

/** `task` with `historyLength` applied, as a new object: the store's own is never changed. */
export const withHistoryLength = (task: Task, historyLength: number | undefined): Task =>
  historyLength === undefined
    ? task
    : { ...task, history: historyLength <= 0 ? [] : (task.history ?? []).slice(-historyLength) }

export const requireTaskId = (taskId: string | undefined): Effect.Effect<string, A2AError> =>
  !taskId || taskId.trim() === ""
    ? Effect.fail(new RequestMalformedError("Task ID is required"))
    : Effect.succeed(taskId)

/**
 * The SDK's `_mapEventToStreamResponse`, but for a task event, which it
 * reloads from the store: ours is whole.
 */
export const streamResponseOf = (event: AgentExecutionEvent): StreamResponse =>
  ({ payload: { $case: event.kind, value: event.data } }) as StreamResponse

/**
 * Whether a run stops for its caller at `event`: a bare message, an ended
 * task, or a question for input. An AUTH_REQUIRED task goes on: its answer
 * comes out of band.
 */
export const stopsAt = (event: AgentExecutionEvent): boolean =>
  event.kind === "message" ||
  (event.kind === "statusUpdate" &&
    (taskState.isTerminal(event.data.status?.state) ||
      event.data.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED))

export const errorText = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : "Unknown error"

/** A task event of a send: the caller's message is in the task's history, first if it was missing. */
export const withUserMessage = (event: taskFold.TaskEvent, userMessage: Message): taskFold.TaskEvent => {
  if (event.kind !== "task") return event
  const history = event.data.history ?? []
  return history.some((known) => known.messageId === userMessage.messageId)
    ? event
    : AgentEvent.task({ ...event.data, history: [userMessage, ...history] })
}

/** What the operations share, made once per handler. @internal */
export interface Core {
  readonly options: Options
  readonly store: TaskStore
  /** The push configs' store when the card declares push notifications. */
  readonly pushStore: PushNotificationStore | undefined
  readonly load: (taskId: string, context: ServerCallContext) => Effect.Effect<Task | undefined, Error>
  /** The task, or TaskNotFound. */
  readonly found: (taskId: string, context: ServerCallContext) => Effect.Effect<Task, Failure>
  /** Runs `effect` in the background, in the handler's runtime (its logger): a run's start, its stages first. */
  readonly runFork: (effect: Effect.Effect<void>) => void
  /** A store's failure, logged whole under an error id: the caller gets the id only. */
  readonly internal: (what: string, taskId: string) => (error: TaskStoreError) => Effect.Effect<never, Error>
  /**
   * The task's channel for the call: its run's, else a new one whose events
   * are appended to the store; `opened` says which.
   */
  readonly openChannel: (
    taskId: string,
    context: ServerCallContext,
    userMessage: Message | undefined
  ) => { readonly channel: internalChannel.Channel; readonly opened: boolean }
}

/** @internal */
export const makeCore = (options: Options): Effect.Effect<Core, never, TaskStore> =>
  Effect.gen(function*() {
    const store = yield* TaskStore
    const runtime = yield* Effect.runtime<never>()
    const runPromise = Runtime.runPromise(runtime)
    const runFork = Runtime.runFork(runtime)
    const { card, channels } = options
    const pushStore = card.capabilities?.pushNotifications
      ? options.pushStore ?? new InMemoryPushNotificationStore()
      : undefined

    // A store's failure is logged whole, under an id; the caller gets the id only.
    const internal = (what: string, taskId: string) => (error: TaskStoreError): Effect.Effect<never, Error> => {
      const errorId = ErrorId.make()
      return Effect.zipRight(
        internalCauses.logErrorOffSpan(`Task store ${what} failed`, {
          errorId,
          taskId,
          cause: internalCauses.renderCause(Cause.die(error.cause ?? error))
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

    /**
     * A run's events as its channel appends them: the caller's message joins a task that has none of it. One
     * closure, kept by the channel for the whole run.
     */
    const appendOf =
      (taskId: string, context: ServerCallContext, userMessage: Message | undefined) =>
      (events: ReadonlyArray<taskFold.TaskEvent>) =>
        runPromise(Effect.catchAll(
          store.append(
            taskId,
            userMessage === undefined ? events : events.map((event) => withUserMessage(event, userMessage)),
            context
          ),
          internal("save", taskId)
        ))

    // One for every channel: it is told which task it gave up on.
    const retry: internalChannel.Retry = {
      retryMillis: options.appendRetryMillis ?? 30_000,
      gaveUp: (taskId, reason, error) =>
        runFork(
          Effect.logWarning(
            reason === "shutdown"
              ? "Could not persist the final task state before the server shut down: the task store was unavailable"
              : "Could not persist the final task state"
          ).pipe(Effect.annotateLogs({ taskId, cause: errorText(error) }))
        )
    }

    const openChannel = (taskId: string, context: ServerCallContext, userMessage: Message | undefined) =>
      channels.open(taskId, context, appendOf(taskId, context, userMessage), retry)
    return { options, store, pushStore, load, found, runFork, internal, openChannel }
  })
