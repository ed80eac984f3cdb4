/**
 * Subscriptions (`SubscribeToTask`): the request handler's event buses with
 * each subscribing call's listeners noted (`makeSubscriptions`), and a
 * subscription carried through its task's pauses.
 *
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
import {
  type A2ARequestHandler,
  AgentEvent,
  type AgentExecutionEvent,
  DefaultExecutionEventBusManager,
  type EventListener,
  type ExecutionEventBus,
  type ExecutionEventBusManager,
  ExecutionEventQueue,
  type FinishedListener,
  type ServerCallContext
} from "@a2a-js/sdk/server"
import * as TaskState from "../../wire/taskState.js"
import * as slowReader from "../edge/slowReader.js"
import { streamResponseOf } from "../handler/busTap.js"

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
export const holding = (subscriptions: Subscriptions, context: object, stop: () => void): Hold => {
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
export const continuing = (handler: A2ARequestHandler, subscriptions: Subscriptions): A2ARequestHandler => {
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

/**
 * The request handler's event buses, with what each subscription
 * (SubscribeToTask) puts on its task's bus noted under its call. The SDK's
 * subscription waits on the bus for the task's next event before it can see
 * that its reader left, and until then its listeners stay: a client that
 * subscribes and drops, over and over, to a task that runs long without
 * news would pile them up. `close` takes them off at once.
 *
 * @internal
 */
export interface Subscriptions {
  /** For the request handler. */
  readonly manager: ExecutionEventBusManager
  /** Notes that the call `context` subscribes. */
  readonly subscribing: (context: object) => void
  /** Stops what the subscription of the call `context` listens with. */
  readonly close: (context: object) => void
  /** Whether the stream of the call `context`, noted as subscribing, was closed. */
  readonly closed: (context: object) => boolean
  /**
   * Hands `onBus` each bus made from now on for the task as the call
   * `context` sees it (its caller's), before its first event: how a
   * subscription goes on to the task's next run. What stops the watch.
   */
  readonly watch: (taskId: string, context: ServerCallContext, onBus: (bus: ExecutionEventBus) => void) => () => void
  /**
   * Runs `stop` when the stream of the call `context` is closed, at once if
   * it was: what a subscription holds beyond the SDK's listeners. What takes
   * `stop` off.
   */
  readonly onClose: (context: object, stop: () => void) => () => void
  /**
   * Notes a subscription whose task is paused, waiting for its next run:
   * `end` runs when the server shuts down, at once if it does already. What
   * takes it off.
   */
  readonly idle: (end: () => void) => () => void
  /** The server shuts down: ends the subscriptions waiting for a paused task, now and from now on. */
  readonly shutdown: () => void
  /**
   * The handler's stream of the call `context`, its reader bounded (see
   * `slowReader.ts`): the events its task's bus delivers to the call are
   * counted against those its reader takes.
   */
  readonly reading: <A>(context: object, stream: AsyncIterator<A>) => AsyncIterableIterator<A>
  /** Resolves once the reader of the call `context` is dropped; undefined for a call that does not stream. */
  readonly dropped: (context: object) => Promise<void> | undefined
}

/** @internal */
export const makeSubscriptions = (): Subscriptions => {
  const buses = new DefaultExecutionEventBusManager()
  // Per subscribing call, how to stop each queue it put on a bus: the queue stops when its bus finishes.
  const stops = new WeakMap<object, Set<() => void>>()
  // The subscriptions watching for their task's next bus, by task id.
  const watchers = new Map<
    string,
    Set<{ readonly context: ServerCallContext; readonly onBus: (bus: ExecutionEventBus) => void }>
  >()
  const idle = new Set<() => void>()
  let shuttingDown = false
  const readers = new WeakMap<object, slowReader.Reader>()
  // The bus as the subscription sees it: the same bus, with the queue's "finished" listener noted.
  const noting = (bus: ExecutionEventBus, noted: Set<() => void>): ExecutionEventBus => {
    // One signature for both kinds of listener: each call is handed on as it came.
    type Listener = EventListener | FinishedListener
    // eslint-disable-next-line no-restricted-syntax -- the bus's overloads, one per listener kind, as one signature
    const loose = bus as unknown as Record<"on" | "off" | "once", (name: string, listener: Listener) => void>
    const seen: ExecutionEventBus = {
      publish: (event) => bus.publish(event),
      finished: () => bus.finished(),
      on: (name: string, listener: Listener) => {
        if (name === "finished") noted.add(listener as FinishedListener)
        loose.on(name, listener)
        return seen
      },
      off: (name: string, listener: Listener) => {
        loose.off(name, listener)
        return seen
      },
      once: (name: string, listener: Listener) => {
        loose.once(name, listener)
        return seen
      },
      removeAllListeners: (name) => {
        bus.removeAllListeners(name)
        return seen
      }
    }
    return seen
  }
  // The bus a call gets: a streaming call's reader counts what the bus delivers (the bus itself stays the one the
  // executor keys its runs by), and a subscription's is noted.
  const seenBy = (bus: ExecutionEventBus | undefined, context: object | undefined) => {
    if (bus === undefined || context === undefined) return bus
    readers.get(context)?.listen(bus)
    const noted = stops.get(context)
    return noted === undefined ? bus : noting(bus, noted)
  }
  return {
    manager: {
      createOrGetByTaskId: (taskId, context) => {
        const before = buses.getByTaskId(taskId, context)
        const bus = buses.createOrGetByTaskId(taskId, context)
        if (bus !== before) {
          // A new run of the task: each subscription of its caller waiting for it takes it from its first event,
          // its reader counting what the run delivers as for the run it started with.
          for (const watcher of watchers.get(taskId) ?? []) {
            if (buses.getByTaskId(taskId, watcher.context) !== bus) continue
            readers.get(watcher.context)?.listen(bus)
            watcher.onBus(bus)
          }
        }
        if (context !== undefined) readers.get(context)?.listen(bus)
        return bus
      },
      getByTaskId: (taskId, context) => seenBy(buses.getByTaskId(taskId, context), context),
      cleanupByTaskId: (taskId, context) => buses.cleanupByTaskId(taskId, context)
    },
    reading: (context, stream) => {
      const reader = slowReader.makeReader()
      readers.set(context, reader)
      return reader.reading(stream)
    },
    dropped: (context) => readers.get(context)?.dropped,
    subscribing: (context) => {
      stops.set(context, new Set())
    },
    close: (context) => {
      readers.get(context)?.stop()
      const noted = stops.get(context)
      stops.delete(context)
      for (const stop of noted ?? []) stop()
    },
    closed: (context) => !stops.has(context),
    watch: (taskId, context, onBus) => {
      const watcher = { context, onBus }
      const forTask = watchers.get(taskId) ?? new Set()
      forTask.add(watcher)
      watchers.set(taskId, forTask)
      return () => {
        forTask.delete(watcher)
        if (forTask.size === 0 && watchers.get(taskId) === forTask) watchers.delete(taskId)
      }
    },
    onClose: (context, stop) => {
      const noted = stops.get(context)
      if (noted === undefined) {
        stop()
        return () => {}
      }
      noted.add(stop)
      return () => void noted.delete(stop)
    },
    idle: (end) => {
      if (shuttingDown) {
        end()
        return () => {}
      }
      idle.add(end)
      return () => void idle.delete(end)
    },
    shutdown: () => {
      shuttingDown = true
      const ending = [...idle]
      idle.clear()
      for (const end of ending) end()
    }
  }
}
