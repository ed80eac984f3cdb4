/**
 * A server whose runs write every event to a shared event log, and whose
 * subscribers read it: a subscriber on any replica streams a run on any
 * other, and a caller whose stream broke resumes right after the last event
 * it saw. It is a stage of the request handler (`handling`): the handler
 * still does the protocol; its resubscription, which reads only this
 * process's channels and refuses an ended task, gives way to one that reads
 * the log.
 *
 * @internal
 */
import {
  type SendMessageRequest,
  StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  TaskState as SdkTaskState
} from "@a2a-js/sdk"
import { RequestMalformedError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import {
  type AgentExecutionEvent,
  type ExecutionEventBus,
  resolveUserScope,
  type ServerCallContext
} from "@a2a-js/sdk/server"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import type * as A2AServer from "../../../A2AServer.js"
import type * as AgentExecutor from "../../../AgentExecutor.js"
import * as internalCauses from "../../observability/causes.js"
import * as ErrorId from "../../wire/errorId.js"
import * as EventId from "../../wire/eventId.js"
import * as taskFold from "../../wire/taskFold.js"
import * as TaskState from "../../wire/taskState.js"
import * as internalAuthentication from "../caller/authentication.js"
import { headersOf } from "../caller/headers.js"
import * as internalDurable from "../durable/durableRun.js"
import { streamResponseOf } from "../handler/core.js"
import type { Failure, RequestHandler } from "../handler/requestHandler.js"
import type * as internalRunStages from "../handler/runStages.js"
import * as internalStages from "../handler/stages.js"
import * as internalSubscription from "../handler/subscription.js"
import { failedTask } from "../idempotency/idempotencyEntry.js"
import type { TaskStore } from "../store/store.js"
import * as internalTaskStore from "../store/taskStore.js"
import type * as internalEventLog from "./eventLog.js"
import * as internalPgEventLog from "./pgEventLog.js"
import * as internalRunClaims from "./runClaims.js"

/** @internal */
export interface Replication {
  /** This replica's id. */
  readonly replica: string
  /**
   * `SubscribeToTask` without a cursor, through `handler`'s checks, read
   * from the log: a run on any replica, from now on.
   */
  readonly subscribe: (
    handler: RequestHandler,
    params: SubscribeToTaskRequest,
    context: ServerCallContext
  ) => Stream.Stream<StreamResponse, Failure>
  /**
   * The run stage of `executor`'s runs: each run holds its task's claim,
   * and each of its events is numbered and written to the log, in the order
   * the store took them, before the caller's stream takes it (which stamps
   * it with its number). A run whose log cannot be read does not start.
   */
  readonly logging: (executor: AgentExecutor.EffectAgentExecutor) => internalRunStages.RunStage
  /**
   * `handler`, its streams' events carrying their numbers, its subscriptions
   * read from the log, through the task's pauses until it ends.
   */
  readonly handling: (
    handler: RequestHandler,
    subscriptions: internalSubscription.Subscriptions,
    /** Whether the ledger takes a message to a task held elsewhere (see `idempotency.Made`). */
    heldElsewhere?: (params: SendMessageRequest, context: ServerCallContext) => boolean
  ) => RequestHandler
}

const stamped = (response: StreamResponse, seq: number | undefined): StreamResponse => {
  const payload = response.payload
  if (seq === undefined || payload === undefined) return response
  return {
    payload: {
      $case: payload.$case,
      value: { ...payload.value, metadata: { ...payload.value.metadata, [EventId.sequenceKey]: seq } }
    }
  } as StreamResponse
}

const agentEventOf = (response: StreamResponse): AgentExecutionEvent | undefined =>
  response.payload === undefined
    ? undefined
    : ({ kind: response.payload.$case, data: response.payload.value }) as AgentExecutionEvent

/**
 * Whether a subscription ends with `response`: a message, or a status that
 * ends the task. A pause does not: the answer's run goes on in the log.
 */
const ends = (response: StreamResponse): boolean =>
  response.payload?.$case === "message" ||
  (response.payload?.$case === "statusUpdate" && TaskState.isTerminal(response.payload.value.status?.state))

// A claim's failure (the database's), as the handler fails.
const failureOf = (error: unknown): Failure => error instanceof Error ? error : new Error(String(error))

const decoded = (entry: internalEventLog.Entry): StreamResponse => StreamResponse.fromJSON(entry.event)

// How long a resumption waits for the event it names to reach the log.
const cursorWaitMillis = 3_000

// How long the log may be out of reach when a run starts, before its request fails.
const lastRetry = Schedule.exponential("50 millis").pipe(
  Schedule.either(Schedule.spaced("1 second")),
  Schedule.upTo("10 seconds")
)

/** Who a call is for: its tenant and the SDK's user scope. */
const holderOf = (context: ServerCallContext): internalRunClaims.Holder => ({
  tenant: context.tenant ?? "",
  owner: resolveUserScope(context)
})

/**
 * Writes the end of a task no run holds, which no run will write, to its
 * log: every subscriber, on every replica, gets it. Not again after an end.
 */
const logEnd = (log: internalEventLog.EventLog, task: Task) =>
  Effect.gen(function*() {
    // What this replica's runs appended is in the log first.
    yield* log.flush
    const last = yield* log.last(task.id)
    const [at] = last === 0 ? [] : yield* log.read(task.id, last - 1)
    if (at !== undefined && ends(decoded(at))) return
    const event: StreamResponse = {
      payload: {
        $case: "statusUpdate",
        value: { taskId: task.id, contextId: task.contextId, status: task.status, metadata: {} }
      }
    }
    log.append(task.id, last + 1, StreamResponse.toJSON(event))
    log.finish(task.id)
    yield* log.flush
  })

/**
 * A replica stopped renewing its claim before its run ended: the task is
 * recorded FAILED (reason interrupted) under a new error id, and its
 * subscribers, on every replica, get that end from the log. A task that
 * ended or paused before is left as it is.
 */
const interrupted = (log: internalEventLog.EventLog, taskStore: TaskStore) => (lapsed: internalRunClaims.Lapsed) =>
  Effect.gen(function*() {
    const { taskId } = lapsed
    const context = internalAuthentication.ownerContext(lapsed.tenant, lapsed.owner)
    const existing = yield* taskStore.get(taskId, context)
    if (existing !== undefined && TaskState.isSettled(existing.status?.state)) return
    const { errorId, task } = failedTask(taskId, existing?.contextId || randomUUID(), existing)
    // The whole task as a run's first event: on a stored one, its status and history replace the stored ones.
    yield* taskStore.append(taskId, [{ kind: "task", data: task }], context)
    yield* logEnd(log, task)
    yield* internalCauses.logErrorOffSpan("Task interrupted: its replica stopped before it ended", {
      errorId,
      reason: "interrupted",
      taskId,
      replica: lapsed.replica
    })
  }).pipe(
    Effect.catchAll((error) =>
      Effect.logWarning("Could not record a task whose replica stopped as FAILED; the next sweep tries again").pipe(
        Effect.annotateLogs({ taskId: lapsed.taskId, cause: String(error) })
      )
    )
  )

/** @internal */
export const make = (
  log: internalEventLog.EventLog,
  claims: internalRunClaims.RunClaims,
  taskStore: TaskStore,
  interrupters: Set<(taskId: string) => void>
): Effect.Effect<Replication> =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    const runFork = Runtime.runFork(runtime)
    // The number of each event a run published, by the event's data, which the SDK's stream hands on as is.
    const numbers = new WeakMap<object, number>()
    // The number of the task event a run started with, by the call that started it: the SDK's stream sends
    // the task reloaded from the store instead.
    const starts = new WeakMap<object, number>()

    /**
     * A cancel another replica wrote to the task store stops the run here at
     * once: that replica nudges the task's watchers (a PostgreSQL store's own
     * cancel notification is the backstop for a nudge lost).
     */
    const canceledElsewhere = (
      executor: AgentExecutor.EffectAgentExecutor,
      taskId: string,
      context: ServerCallContext,
      bus: ExecutionEventBus
    ): Effect.Effect<void> =>
      Effect.scoped(Effect.flatMap(log.nudges(taskId), (watcher) => {
        const check: Effect.Effect<void> = Effect.zipRight(
          watcher.next(),
          Effect.flatMap(
            Effect.orElseSucceed(taskStore.get(taskId, context), () => undefined),
            (task) =>
              task?.status?.state === SdkTaskState.TASK_STATE_CANCELED
                ? Effect.promise(() => executor.cancelTask(taskId, bus))
                : check
          )
        )
        return check
      }))

    const logging = (executor: AgentExecutor.EffectAgentExecutor): internalRunStages.RunStage => {
      interrupters.add(executor.interrupt)
      return { start: (run) => logged(executor, run) }
    }
    const logged = (
      executor: AgentExecutor.EffectAgentExecutor,
      { bus, requestContext }: internalRunStages.Run
    ): Effect.Effect<internalRunStages.RunHooks, Error> => {
      const taskId = requestContext.taskId
      const context = requestContext.context
      // One run per task at a time: its numbers go on from the log's last.
      const last = log.last(taskId).pipe(
        Effect.retry(lastRetry),
        Effect.catchAll((error) => {
          const errorId = ErrorId.make()
          return Effect.zipRight(
            internalCauses.logErrorOffSpan("The event log could not be read; the run does not start", {
              errorId,
              taskId,
              cause: error.message
            }),
            Effect.fail(new Error(ErrorId.internalErrorText(errorId)))
          )
        })
      )
      const held = Effect.flatMap(
        Effect.orElseSucceed(claims.acquire(taskId, holderOf(context)), () => false),
        // A message to a task held elsewhere was refused before its run; what comes here runs.
        (won) =>
          won ? Effect.void : Effect.logWarning("A run started without its task's claim").pipe(
            Effect.annotateLogs({ taskId })
          )
      )
      return Effect.map(Effect.zipLeft(last, held), (from): internalRunStages.RunHooks => {
        let seq = from
        const watching = runFork(canceledElsewhere(executor, taskId, context, bus))
        return {
          event: (event) => {
            seq += 1
            numbers.set(event.data, seq)
            if (event.kind === "task") starts.set(context, seq)
            const response = streamResponseOf(event)
            log.append(taskId, seq, StreamResponse.toJSON(response))
            if (ends(response)) log.finish(taskId)
          },
          end: Effect.zipRight(
            Effect.sync(() => watching.unsafeInterruptAsFork(FiberId.none)),
            // A durable run its process left goes on elsewhere: its claim lapses for a sweep to find.
            Effect.ignore(
              Effect.suspend(() =>
                internalDurable.wasLeft(requestContext) ? claims.lapse(taskId) : claims.release(taskId)
              )
            )
          )
        }
      })
    }

    /**
     * The task's last number in the log, once it reaches `seq`. The run's replica writes its events a moment after
     * it sends them (and saves them to the store): a caller may have seen one not yet in the log. That one is
     * waited for, a while; what the log has then is the answer.
     */
    const lastReaching = (taskId: string, seq: number): Effect.Effect<number, internalEventLog.EventLogError> =>
      Effect.flatMap(Clock.currentTimeMillis, (start) => {
        const look: Effect.Effect<number, internalEventLog.EventLogError> = Effect.flatMap(
          log.last(taskId),
          (last) =>
            last >= seq ? Effect.succeed(last) : Effect.flatMap(
              Clock.currentTimeMillis,
              (now) => now >= start + cursorWaitMillis ? Effect.succeed(last) : Effect.zipRight(Effect.sleep(50), look)
            )
        )
        return look
      })

    /** The task as of its log's last event, and that event's number: the log's view, never behind it. */
    const snapshot = (taskId: string, stored: Task) =>
      Effect.gen(function*() {
        // A stored task has a run that started it, whose first event may not be in the log yet.
        yield* lastReaching(taskId, 1)
        const entries = yield* log.read(taskId, 0)
        const last = entries.at(-1)
        if (last === undefined) return { task: stored, seq: 0 }
        // Each run starts with the whole task: what came before it is in it.
        const from = entries.findLastIndex((entry, i) => i === 0 || decoded(entry).payload?.$case === "task")
        const events = entries.slice(from).flatMap((entry) => {
          const event = agentEventOf(decoded(entry))
          // A message in the log is a bare answer, no task's.
          return event === undefined || event.kind === "message" ? [] : [event]
        })
        return { task: taskFold.fold(undefined, events) ?? stored, seq: last.seq }
      })

    /**
     * The task's events after `after`, until one ends it. With `hold`, a
     * subscriber's stream: it lets go of the log when the stream closes,
     * or, while the task is paused, at shutdown.
     */
    const following = (
      taskId: string,
      after: number,
      hold?: (stop: () => void) => internalSubscription.Hold
    ): Stream.Stream<StreamResponse, internalEventLog.EventLogError> => {
      const responses = log.follow(taskId, after).pipe(
        Stream.map((entry) => ({ seq: entry.seq, response: decoded(entry) })),
        Stream.takeUntil(({ response }) => ends(response))
      )
      const stamp = ({ response, seq }: { readonly seq: number; readonly response: StreamResponse }) =>
        stamped(response, seq)
      if (hold === undefined) return Stream.map(responses, stamp)
      return Stream.unwrapScoped(Effect.gen(function*() {
        // Ends a wait for the next entry at once.
        const stopped = yield* Deferred.make<void>()
        const held = yield* Effect.acquireRelease(
          Effect.sync(() => hold(() => Deferred.unsafeDone(stopped, Exit.void))),
          (held) => Effect.sync(held.release)
        )
        return responses.pipe(
          Stream.tap(({ response }) => Effect.sync(() => held.saw(internalSubscription.stateOf(response)))),
          Stream.map(stamp),
          Stream.interruptWhenDeferred(stopped)
        )
      }))
    }

    /**
     * A subscription as the spec has it: the task, then every later event,
     * through its pauses, until it ends.
     */
    const subscribe = (
      handler: RequestHandler,
      params: SubscribeToTaskRequest,
      context: ServerCallContext,
      hold?: (stop: () => void) => internalSubscription.Hold
    ): Stream.Stream<StreamResponse, Failure> =>
      Stream.unwrap(Effect.gen(function*() {
        // The handler's own checks: a valid id, the caller's own task, else TaskNotFound.
        const stored = yield* handler.getTask({ id: params.id, tenant: params.tenant }, context)
        const taskId = stored.id
        const state = stored.status?.state
        if (TaskState.isTerminal(state)) {
          return yield* Effect.fail(
            new UnsupportedOperationError(
              `Task ${taskId} is in a terminal state (${state}) and cannot be subscribed to.`
            )
          )
        }
        const { seq, task } = yield* snapshot(taskId, stored)
        const first = Stream.succeed(stamped({ payload: { $case: "task", value: task } }, seq))
        return TaskState.isTerminal(task.status?.state) ? first : Stream.concat(first, following(taskId, seq, hold))
      }))

    const handling = (
      handler: RequestHandler,
      subscriptions: internalSubscription.Subscriptions,
      heldElsewhere: (params: SendMessageRequest, context: ServerCallContext) => boolean = () => false
    ): RequestHandler => {
      /**
       * Holds the task a message continues, for its run: refused (-32004, or
       * TaskNotFound to a caller who may not see it) while another replica's
       * run holds it, unless the ledger takes the message (a keyed one).
       * What lets go of the hold, when one was taken.
       */
      const claimed = (
        params: SendMessageRequest,
        context: ServerCallContext
      ): Effect.Effect<Effect.Effect<void>, Failure> => {
        const taskId = params.message?.taskId
        if (!taskId) return Effect.succeed(Effect.void)
        return Effect.flatMap(
          Effect.mapError(claims.acquire(taskId, holderOf(context)), failureOf),
          (won): Effect.Effect<Effect.Effect<void>, Failure> =>
            won
              ? Effect.succeed(claims.release(taskId))
              : heldElsewhere(params, context)
              ? Effect.succeed(Effect.void)
              : Effect.zipRight(
                handler.getTask({ id: taskId, tenant: params.tenant }, context),
                Effect.fail(internalStages.stillRunning(taskId))
              )
        )
      }
      // A stream's event with its number: a run's task event is the one it started with, reloaded from the store.
      const numbered = (context: ServerCallContext) => (response: StreamResponse): StreamResponse => {
        const payload = response.payload
        return stamped(
          response,
          payload?.$case === "task"
            ? starts.get(context)
            : payload === undefined
            ? undefined
            : numbers.get(payload.value)
        )
      }
      return {
        ...handler,
        sendMessage: (params, context) =>
          Effect.acquireUseRelease(
            claimed(params, context),
            () => handler.sendMessage(params, context),
            (release) => release
          ),
        sendMessageStream: (params, context) =>
          Stream.unwrapScoped(
            Effect.map(
              Effect.acquireRelease(claimed(params, context), (release) => release),
              () => Stream.map(handler.sendMessageStream(params, context), numbered(context))
            )
          ),
        // Held for the cancel unless another replica's run holds it: no run starts meanwhile, and a paused task's
        // end is written to the log here, as no run will write it (a run here has written its own by then).
        cancelTask: (params, context) =>
          Effect.acquireUseRelease(
            Effect.orElseSucceed(claims.acquire(params.id, holderOf(context)), () => false),
            (idle) =>
              Effect.tap(
                handler.cancelTask(params, context),
                (task) =>
                  task.status?.state !== SdkTaskState.TASK_STATE_CANCELED
                    ? Effect.void
                    // The run may be on another replica, which learns of it from the nudge.
                    : Effect.ignore(idle ? logEnd(log, task) : log.nudge(task.id))
              ),
            (idle) => idle ? claims.release(params.id) : Effect.void
          ),
        resubscribe: (params, context) =>
          Stream.unwrap(Effect.gen(function*() {
            const cursor = EventId.cursorOf(headersOf(context))
            if (cursor._tag === "Invalid") {
              return yield* Effect.fail(
                new RequestMalformedError("Last-Event-ID must be the number of an event of the task's stream")
              )
            }
            const hold = (stop: () => void) => internalSubscription.holding(subscriptions, context, stop)
            if (cursor._tag === "None") return subscribe(handler, params, context, hold)
            // The handler's own checks: a valid id, the caller's own task, else TaskNotFound.
            const stored = yield* handler.getTask({ id: params.id, tenant: params.tenant }, context)
            const taskId = stored.id
            // A number the log never reaches is the caller's mistake.
            const last = yield* lastReaching(taskId, cursor.seq)
            if (cursor.seq > last) {
              return yield* Effect.fail(
                new RequestMalformedError(
                  `Last-Event-ID ${cursor.seq} is past the last event of task ${taskId} (${last})`
                )
              )
            }
            // Resumed after the event that ended the task: nothing more comes.
            const [at] = cursor.seq === 0 ? [] : yield* log.read(taskId, cursor.seq - 1)
            if (at !== undefined && ends(decoded(at))) return Stream.empty
            return following(taskId, cursor.seq, hold)
          }))
      }
    }

    return { replica: claims.replica, logging, handling, subscribe }
  })

/**
 * The replication `options` name: its event log on their PostgreSQL, open
 * for the scope.
 *
 * @internal
 */
export const open = (
  options: A2AServer.ReplicationOptions,
  taskStore: TaskStore,
  durable?: (claims: internalRunClaims.RunClaims) => (lapsed: internalRunClaims.Lapsed) => Effect.Effect<boolean>
): Effect.Effect<Replication, internalTaskStore.TaskStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const log = yield* Effect.mapError(
      internalPgEventLog.makePg({
        url: options.url,
        retention: options.retention,
        pollInterval: options.pollInterval,
        carry: options.carryEvents
      }),
      (error) =>
        new internalTaskStore.TaskStoreError({
          reason: error.reason === "Unavailable"
            ? "Connection"
            : error.reason === "MissingPackage"
            ? "MissingPackage"
            : "Driver",
          message: error.message
        })
    )
    // Added after the log, so run before it closes: what the runs appended is written first.
    yield* Effect.addFinalizer(() => log.flush)
    // The executors whose runs stop when their claims are lost, known once `logging` makes their run stage.
    const lost = new Set<(taskId: string) => void>()
    // A durable run's lapsed claim is taken to resume it (`edge/resumes.ts`); any other's task ends FAILED.
    const late: { resumed?: ((lapsed: internalRunClaims.Lapsed) => Effect.Effect<boolean>) | undefined } = {}
    const failed = interrupted(log, taskStore)
    const claims = yield* Effect.mapError(
      internalRunClaims.make({
        url: options.url,
        lease: options.lease,
        sweep: options.sweep,
        onLapsed: (lapsed) =>
          late.resumed === undefined
            ? failed(lapsed)
            : Effect.flatMap(late.resumed(lapsed), (handled) => handled ? Effect.void : failed(lapsed)),
        onLost: (taskIds) => Effect.sync(() => lost.forEach((stop) => taskIds.forEach(stop)))
      }),
      (failure) => new internalTaskStore.TaskStoreError(failure)
    )
    late.resumed = durable?.(claims)
    return yield* make(log, claims, taskStore, lost)
  })
