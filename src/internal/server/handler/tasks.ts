/**
 * GetTask, ListTasks, CancelTask and SubscribeToTask, with the checks the
 * SDK's handler makes: a task's run is stopped on its channel, and a paused
 * task's cancel is its channel's one event.
 *
 * @internal
 */
import { type StreamResponse, TaskState } from "@a2a-js/sdk"
import { A2AError, RequestMalformedError, TaskNotCancelableError, UnsupportedOperationError } from "@a2a-js/sdk/errors"
import { AgentEvent, type AgentExecutionEvent } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as wireParts from "../../wire/parts.js"
import * as taskState from "../../wire/taskState.js"
import type * as internalChannel from "./channel.js"
import { type Core, type RequestHandler, requireTaskId, stopsAt, streamResponseOf, withHistoryLength } from "./core.js"

// The page size when none is asked for, and the states a filter may name (unspecified among them), as the SDK's.
const defaultPageSize = 50
const validStates: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8])

/** @internal */
export const makeTasks = (
  core: Core
): Pick<RequestHandler, "getTask" | "listTasks" | "cancelTask" | "resubscribe"> => {
  const { found, internal, load, openChannel, options, store } = core
  const { card, channels, executor } = options

  const getTask: RequestHandler["getTask"] = (params, context) =>
    Effect.flatMap(
      requireTaskId(params.id),
      (taskId) => Effect.map(found(taskId, context), (task) => withHistoryLength(task, params.historyLength))
    )

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
          tasks: response.tasks.map((task) => withHistoryLength(task, params.historyLength))
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
        const canceling = openChannel(taskId, context, undefined).channel
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

  return { getTask, listTasks, cancelTask, resubscribe }
}
