/**
 * What the executor learns from the task store and writes to it. It watches
 * the request handler's saves: on the usual path the SDK saves a run's final
 * state itself, and seeing that save spares a store read. It writes the final
 * state itself when nobody did (a dropped stream, a store that was down), so
 * no task stays WORKING. For an executor in the SDK's own request handler
 * (`AgentExecutor.make` with a `taskStore`): the server's handler appends a
 * run's events itself, its end included (see `lifecycle/channel.ts`).
 *
 * @internal
 */
import type { Task, TaskState, TaskStatus, TaskStatusUpdateEvent } from "@a2a-js/sdk"
import { A2AError } from "@a2a-js/sdk/errors"
import {
  AgentEvent,
  type RequestContext,
  ResultManager,
  type ServerCallContext,
  type TaskStore
} from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as FiberId from "effect/FiberId"
import * as Schedule from "effect/Schedule"
import * as ErrorId from "../../wire/errorId.js"
import * as taskState from "../../wire/taskState.js"
import * as internalFailure from "./failure.js"
import type { RunEvents } from "./runEvents.js"

/** Forks an effect on the executor's runtime. */
export type RunFork = <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>

// A custom store's call that throws instead of rejecting, as a rejection: every call it began then ends.
export const settled = <A>(call: () => Promise<A>): Promise<A> => {
  try {
    return call()
  } catch (error) {
    return Promise.reject(error)
  }
}

// On the context of a request: its store calls in flight, and when the last one ended.
const activityKey = Symbol("effect-a2a/StoreActivity")
interface Active {
  [activityKey]?: { inFlight: number; lastEnded: number }
}
// How long a run's final save is waited for once its request's store calls are quiet, and while one of them
// hangs: a handler that goes on completing its store calls is working through the run's events, and is waited for.
// A final state written past a hung call still waits for it: the SDK's ResultManagers of a task, the handler's and
// `finalWriter`'s, take one lock per task and process, so it goes in as soon as that call settles.
const saveIdle = 100
const saveWaitLimit = 30_000
/**
 * Executor options not on the public faces: a symbol key, so no public option can collide with it. `saveWaitLimit`,
 * in milliseconds: how long a store call of the handler may hang before the executor writes the final state
 * itself. The tests' way to reach it without waiting 30 s.
 */
export const saveWaitLimitOption: unique symbol = Symbol.for("effect-a2a/AgentExecutor/saveWaitLimit")
export interface SaveWaitOptions {
  readonly [saveWaitLimitOption]?: number | undefined
}
/** How many pauses written ahead of a lagging handler are kept from being overwritten at once. */
const maxPausedAhead = 10_000

/** The handler's saves, watched. */
export interface SaveWatch {
  /** The store, watched: the one to give the request handler. */
  readonly taskStore: TaskStore
  /**
   * Resolves true once the final state is saved through the watched store,
   * false once the request's store calls have been quiet for a while
   * (nobody is processing the events) or one of them has hung for
   * `saveWaitLimit` with none ending.
   */
  readonly finalSaved: (
    taskId: string,
    state: TaskState | undefined,
    callContext: ServerCallContext | undefined
  ) => Promise<boolean>
  /** A pause the executor writes itself, kept from the lagging handler's older saves (see `keepPause`). */
  readonly rememberPause: (taskId: string, status: TaskStatus) => void
}

export const watchSaves = (store: TaskStore, runFork: RunFork, waitLimit: number = saveWaitLimit): SaveWatch => {
  const awaitingSave = new Map<string, { readonly state: TaskState | undefined; readonly saved: () => void }>()
  // A store failure reaches the SDK, which would write its message into the
  // task's status text (SQL, driver detail): give it an opaque id instead.
  const storeFailure = (operation: string, taskId: string) => (error: unknown): never => {
    // The caller's own mistake, as the SDK's stores report it (a page token that does not decode): -32602 as is.
    if (error instanceof A2AError) throw error
    const errorId = ErrorId.make()
    runFork(
      internalFailure.logErrorOffSpan(`Task store ${operation} failed`, {
        errorId,
        taskId,
        cause: internalFailure.renderCause(Cause.die(error))
      })
    )
    throw new Error(ErrorId.internalErrorText(errorId))
  }
  // The store calls in flight, and when the last one ended: while the
  // handler is still working through a run's events (a slow store, many
  // events), its final save is waited for, not written ahead of them.
  // Counted per request: the handler works through a run's events under
  // the context of the request that started it, while readers of the task
  // (GetTask, a cancel from another replica) come with their own.
  const tracked = <A>(callContext: ServerCallContext | undefined, call: () => Promise<A>): Promise<A> => {
    if (callContext === undefined) return settled(call)
    const activity = ((callContext as Active)[activityKey] ??= { inFlight: 0, lastEnded: 0 })
    activity.inFlight++
    const ended = () => {
      activity.inFlight--
      activity.lastEnded = performance.now()
    }
    return settled(call).finally(ended)
  }
  // Pauses (input or auth required) the executor wrote itself because the handler fell behind (a
  // stream reader that stalls): the handler then goes on saving the run's earlier events, and the SDK
  // keeps only terminal states from being overwritten. Its saves of those, no newer than the pause,
  // keep the pause. Dropped once the handler catches up or a newer run moves the task on.
  const pausedAhead = new Map<string, TaskStatus>()
  const keepPause = (task: Task): Task => {
    const paused = pausedAhead.get(task.id)
    if (paused === undefined) return task
    const state = task.status?.state
    const stale = taskState.isRunning(state) &&
      (task.status?.timestamp ?? "") <= (paused.timestamp ?? "")
    if (!stale) {
      pausedAhead.delete(task.id)
      return task
    }
    const question = paused.message
    const history = task.history ?? []
    return {
      ...task,
      status: paused,
      history: question === undefined || history.some((message) => message.messageId === question.messageId)
        ? history
        : [...history, question]
    }
  }
  const rememberPause = (taskId: string, status: TaskStatus): void => {
    // Bounded: a task whose handler never catches up (its reader left) holds its entry.
    const oldest = pausedAhead.keys().next()
    if (pausedAhead.size >= maxPausedAhead && !oldest.done) pausedAhead.delete(oldest.value)
    pausedAhead.set(taskId, status)
  }
  const taskStore: TaskStore = {
    save: (saving, callContext) => {
      const task = keepPause(saving)
      return tracked(callContext, () => store.save(task, callContext)).then(() => {
        const waiting = awaitingSave.get(task.id)
        const state = task.status?.state
        if (waiting !== undefined && (state === waiting.state || taskState.isTerminal(state))) {
          awaitingSave.delete(task.id)
          waiting.saved()
        }
      }, storeFailure("save", task.id))
    },
    load: (taskId, callContext) =>
      tracked(callContext, () => store.load(taskId, callContext)).then(undefined, storeFailure("load", taskId)),
    list: (params, callContext) => store.list(params, callContext).then(undefined, storeFailure("list", ""))
  }
  const finalSaved: SaveWatch["finalSaved"] = (taskId, state, callContext) =>
    new Promise((resolve) => {
      const startedAt = performance.now()
      let timer: ReturnType<typeof setTimeout>
      const check = () => {
        const now = performance.now()
        const activity = callContext === undefined ? undefined : (callContext as Active)[activityKey]
        const busy = activity !== undefined && activity.inFlight > 0
        const sinceEnded = now - Math.max(activity?.lastEnded ?? 0, startedAt)
        // No fixed limit on a handler whose calls go on ending: the SDK's ResultManager drops every status it
        // processes after a terminal state is stored, so a final state written ahead of it would lose the rest
        // of the run's history.
        if (sinceEnded < (busy ? waitLimit : saveIdle)) {
          timer = setTimeout(check, busy ? saveIdle : saveIdle - sinceEnded)
          return
        }
        if (awaitingSave.get(taskId) === waiting) awaitingSave.delete(taskId)
        resolve(false)
      }
      const waiting = {
        state,
        saved: () => {
          clearTimeout(timer)
          resolve(true)
        }
      }
      awaitingSave.set(taskId, waiting)
      timer = setTimeout(check, saveIdle)
    })
  return { taskStore, finalSaved, rememberPause }
}

// Writing a final state the handler did not: retried while the store is down, at most 5 s apart.
export const persistRetry = (timeout: Duration.DurationInput) =>
  Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("5 seconds")), Schedule.upTo(timeout))

/** The final states the executor writes itself. */
export interface FinalWriter {
  /** Writes `event` on a fiber of its own; resolves once it was written or given up. */
  readonly persist: (
    context: RequestContext,
    events: RunEvents,
    initial: Task,
    event: TaskStatusUpdateEvent
  ) => Promise<void>
  /** Stops the writes in progress: a shutdown's deadline. */
  readonly stop: (fiberId: FiberId.FiberId) => void
}

export const finalWriter = (
  store: TaskStore,
  finalSaveTimeout: Duration.DurationInput,
  runFork: RunFork
): FinalWriter => {
  const finalSaveRetry = persistRetry(finalSaveTimeout)
  // Writes the final state when the caller's own event processing did not
  // (it stops when a stream is dropped), so no task stays WORKING, with the
  // run's artifacts (each replaces its earlier copy, if one was saved).
  const persistFinal = (context: RequestContext, events: RunEvents, initial: Task, event: TaskStatusUpdateEvent) => {
    const state = event.status?.state
    const attempt = (createMissing: boolean) =>
      Effect.tryPromise(async () => {
        const loaded = await store.load(context.taskId, context.context)
        if (loaded === undefined && !createMissing) return false
        if (
          loaded !== undefined && (loaded.status?.state === state || taskState.isTerminal(loaded.status?.state))
        ) return true
        const manager = new ResultManager(store, context.context)
        // With the statuses the handler has not saved yet, which it drops once a terminal state is stored, and
        // the final state in the same save: the handler's next event may be an ending of its own (the SDK's
        // FAILED once a save of it failed). As a task event: saved under the SDK's lock for the task, whole,
        // whatever the handler saved meanwhile.
        const base = loaded ?? initial
        const history = base.history ?? []
        const saved = new Set(history.map((message) => message.messageId))
        const unsaved = events.messages.filter((message) => !saved.has(message.messageId))
        if (loaded === undefined || unsaved.length > 0) {
          const last = event.status?.message
          await manager.processEvent(AgentEvent.task({
            ...base,
            status: event.status,
            history: [...history, ...unsaved, ...(last === undefined || saved.has(last.messageId) ? [] : [last])]
          }))
        }
        for (const artifact of events.artifacts) await manager.processEvent(artifact)
        await manager.processEvent(AgentEvent.statusUpdate(event))
        return true
      })
    // A store that is down for a while (a failover) is waited for, within bounds; a shutdown stops waiting.
    const retried = (createMissing: boolean) => Effect.retry(attempt(createMissing), finalSaveRetry)
    const ids = { taskId: context.taskId, contextId: context.contextId }
    return retried(false).pipe(
      Effect.flatMap((done) => done ? Effect.void : Effect.zipRight(Effect.sleep("100 millis"), retried(true))),
      Effect.catchAllCause((cause) =>
        Effect.logWarning("Could not persist the final task state").pipe(
          Effect.annotateLogs({ ...ids, cause: internalFailure.renderCause(cause) })
        )
      ),
      Effect.onInterrupt(() =>
        Effect.logWarning(
          "Could not persist the final task state before the server shut down: the task store was unavailable"
        )
          .pipe(Effect.annotateLogs(ids))
      )
    )
  }
  // On their own fibers: a shutdown stops them at its deadline.
  const persisting = new Set<Fiber.RuntimeFiber<void>>()
  const persist: FinalWriter["persist"] = (context, events, initial, event) =>
    new Promise((resolve) => {
      const fiber = runFork(persistFinal(context, events, initial, event))
      persisting.add(fiber)
      fiber.addObserver(() => {
        persisting.delete(fiber)
        resolve()
      })
    })
  const stop = (fiberId: FiberId.FiberId) => {
    for (const fiber of persisting) fiber.unsafeInterruptAsFork(fiberId)
  }
  return { persist, stop }
}
