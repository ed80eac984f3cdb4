/**
 * `SubscribeToTask` through a task's pauses. The spec (§3.1.6) ends a
 * subscription when its task ends, not when it pauses for input or
 * authentication: the answering message's events reach every subscriber.
 * Our executor runs each message on a bus of its own, and the SDK's
 * subscription ends with the run it follows, so a subscription is carried
 * from one run of its task to the next here (the event log carries it on
 * replicas, see `replication.ts`).
 *
 * A subscription to a paused task that is never answered stays open until
 * its caller lets go or the server shuts down, which ends it at once; it
 * holds no run and nothing of the task meanwhile, only its place in the
 * watch of the task's next run.
 *
 * @internal
 */
import { type StreamResponse, type Task, TaskState as SdkTaskState } from "@a2a-js/sdk"
import { type A2ARequestHandler, AgentEvent, type AgentExecutionEvent, ExecutionEventQueue } from "@a2a-js/sdk/server"
import * as TaskState from "../../wire/taskState.js"
import { streamResponseOf } from "../handler/busTap.js"
import type * as internalRpc from "./rpc.js"

/** The state a subscription's event gives its task, if it gives one. */
export const stateOf = (response: StreamResponse): SdkTaskState | undefined => {
  const payload = response.payload
  return payload?.$case === "task" || payload?.$case === "statusUpdate" ? payload.value.status?.state : undefined
}

/** What a subscription holds while it follows its task; see {@link holding}. */
export interface Hold {
  /** Notes the state an event gave the task: a subscription waits as idle while its task is paused. */
  readonly saw: (state: SdkTaskState | undefined) => void
  readonly release: () => void
}

/**
 * Ends a subscription with `stop` when its stream is closed, and, while its
 * task is paused, when the server shuts down: nothing would come before
 * then, and the shutdown would otherwise wait for its connection.
 *
 * @internal
 */
export const holding = (subscriptions: internalRpc.Subscriptions, context: object, stop: () => void): Hold => {
  const unclose = subscriptions.onClose(context, stop)
  let unidle: (() => void) | undefined
  return {
    saw: (state) => {
      if (TaskState.isPaused(state)) unidle ??= subscriptions.idle(stop)
      else if (TaskState.isRunning(state)) {
        unidle?.()
        unidle = undefined
      }
    },
    release: () => {
      unclose()
      unidle?.()
    }
  }
}

// An event of a run as the SDK's subscription hands it on: the task's own, and no message.
const responseOf = (taskId: string, event: AgentExecutionEvent): StreamResponse | undefined => {
  if (event.kind === "message") return undefined
  const id = event.kind === "task" ? event.data.id : event.data.taskId
  return id === taskId ? streamResponseOf(event) : undefined
}

/**
 * `handler`, its subscriptions carried from one run of their task to the
 * next until the task ends, and a cancel of a paused task (which has no run
 * to say so) told to them.
 *
 * @internal
 */
export const continuing = (handler: A2ARequestHandler, subscriptions: internalRpc.Subscriptions): A2ARequestHandler => {
  const resubscribe = async function*(
    ...[params, context]: Parameters<A2ARequestHandler["resubscribe"]>
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const taskId = params.id
    // The task's runs from now on, each queued from its first event: watched before the SDK's subscription looks
    // for the run in progress, so that none starts unseen in between.
    const runs: Array<ExecutionEventQueue> = []
    let gone = false
    let wake: (() => void) | undefined
    const woken = () => {
      const resume = wake
      wake = undefined
      resume?.()
    }
    const unwatch = subscriptions.watch(taskId, context, (bus) => {
      runs.push(new ExecutionEventQueue(bus))
      woken()
    })
    const hold = holding(subscriptions, context, () => {
      gone = true
      for (const run of runs) run.stop()
      woken()
    })
    try {
      let state: SdkTaskState | undefined
      const seen = (response: StreamResponse) => {
        state = stateOf(response) ?? state
        hold.saw(state)
        return response
      }
      for await (const response of handler.resubscribe(params, context)) yield seen(response)
      while (!TaskState.isTerminal(state) && !gone) {
        if (runs.length === 0) await new Promise<void>((resume) => (wake = resume))
        const run = runs.shift()
        if (gone || run === undefined) return
        for await (const event of run.events()) {
          const response = responseOf(taskId, event)
          if (response !== undefined) yield seen(response)
        }
      }
    } finally {
      unwatch()
      hold.release()
      for (const run of runs) run.stop()
    }
  }

  const cancelTask = async (...[params, context]: Parameters<A2ARequestHandler["cancelTask"]>): Promise<Task> => {
    const ran = subscriptions.manager.getByTaskId(params.id, context) !== undefined
    const task = await handler.cancelTask(params, context)
    const { manager } = subscriptions
    // Canceled with no run (paused): the SDK wrote it to the store alone, and the task's subscribers hear of it here.
    if (
      !ran && task.status?.state === SdkTaskState.TASK_STATE_CANCELED &&
      manager.getByTaskId(task.id, context) === undefined
    ) {
      const bus = manager.createOrGetByTaskId(task.id, context)
      bus.publish(
        AgentEvent.statusUpdate({ taskId: task.id, contextId: task.contextId, status: task.status, metadata: {} })
      )
      bus.finished()
      manager.cleanupByTaskId(task.id, context)
    }
    return task
  }

  return new Proxy(handler, {
    get(target, property) {
      if (property === "resubscribe") return resubscribe
      if (property === "cancelTask") return cancelTask
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === "function" ? value.bind(target) : value
    }
  })
}
