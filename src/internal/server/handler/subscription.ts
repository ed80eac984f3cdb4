/**
 * Subscriptions (`SubscribeToTask`), as stages of the request handler: the
 * handler's channels with each subscribing call's followers noted, and the
 * registry of its readers the transports read (`makeSubscriptions`); a
 * subscription carried through its task's pauses (`continuing`); every
 * stream's reader bounded (`bounding`).
 *
 * `SubscribeToTask` through a task's pauses. The spec (§3.1.6) ends a
 * subscription when its task ends, not when it pauses for input or
 * authentication: the answering message's events reach every subscriber.
 * Each message runs on a channel of its own, and the handler's
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
import type { StreamResponse, TaskState as SdkTaskState } from "@a2a-js/sdk"
import type { UnsupportedOperationError } from "@a2a-js/sdk/errors"
import type { AgentExecutionEvent, EventListener, FinishedListener, ServerCallContext } from "@a2a-js/sdk/server"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as TaskState from "../../wire/taskState.js"
import * as internalChannel from "./channel.js"
import { type RequestHandler, stopsAt, streamResponseOf } from "./core.js"
import * as slowReader from "./slowReader.js"

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

// An event of a run as the handler's subscription hands it on: the task's own, and no message.
const responseOf = (taskId: string, event: AgentExecutionEvent): StreamResponse | undefined => {
  if (event.kind === "message") return undefined
  const id = event.kind === "task" ? event.data.id : event.data.taskId
  return id === taskId ? streamResponseOf(event) : undefined
}

/**
 * A run's events as a subscription carried to it reads them: queued from
 * its first, from the moment the run is seen (a subscription may read it
 * later), until the run stops for its caller (see `stopsAt`) or its channel
 * ends.
 */
class FollowedRun {
  private readonly queued: Array<AgentExecutionEvent> = []
  private ended = false
  private wake: (() => void) | undefined
  private readonly unfollow: () => void

  constructor(channel: internalChannel.Channel) {
    this.unfollow = channel.follow({
      event: (event) => {
        this.queued.push(event)
        this.wake?.()
      },
      failed: () => this.stop(),
      finished: () => this.stop()
    })
  }

  stop(): void {
    this.ended = true
    this.unfollow()
    this.wake?.()
  }

  readonly events: Stream.Stream<AgentExecutionEvent> = Stream.async((emit) => {
    let open = true
    const drain = () => {
      while (open) {
        const event = this.queued.shift()
        if (event === undefined) {
          if (this.ended) {
            open = false
            void emit.end()
          }
          return
        }
        void emit.single(event)
        if (stopsAt(event)) {
          open = false
          this.stop()
          void emit.end()
        }
      }
    }
    this.wake = drain
    drain()
    return Effect.sync(() => this.stop())
  }, "unbounded")
}

/**
 * `handler`, its subscriptions carried from one run of their task to the
 * next until the task ends.
 *
 * @internal
 */
export const continuing = (handler: RequestHandler, subscriptions: Subscriptions): RequestHandler => ({
  ...handler,
  resubscribe: (params, context) =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const taskId = params.id
      // The task's runs from now on, each queued from its first event: watched before the handler's subscription
      // looks for the run in progress, so that none starts unseen in between.
      const runs = yield* Queue.unbounded<FollowedRun>()
      const seen = new Set<FollowedRun>()
      yield* Effect.acquireRelease(
        Effect.sync(() =>
          subscriptions.watch(taskId, context, (channel) => {
            const run = new FollowedRun(channel)
            seen.add(run)
            runs.unsafeOffer(run)
          })
        ),
        (unwatch) =>
          Effect.sync(() => {
            unwatch()
            for (const run of seen) run.stop()
          })
      )
      // Closed, or paused at shutdown: the stream ends at once, wherever it waits.
      const gone = yield* Deferred.make<void>()
      const hold = yield* Effect.acquireRelease(
        Effect.sync(() => holding(subscriptions, context, () => Deferred.unsafeDone(gone, Effect.void))),
        (hold) => Effect.sync(hold.release)
      )
      const later = Stream.flatMap(
        Stream.fromQueue(runs),
        (run) => Stream.filterMap(run.events, (event) => Option.fromNullable(responseOf(taskId, event)))
      )
      return Stream.concat(handler.resubscribe(params, context), later).pipe(
        Stream.tap((response) => Effect.sync(() => hold.saw(stateOf(response)))),
        Stream.takeUntil((response) => TaskState.isTerminal(stateOf(response))),
        Stream.interruptWhen(Deferred.await(gone))
      )
    }))
})

/**
 * `handler`, each of its streams read through `subscriptions` (see
 * `Subscriptions.reading`): its reader bounded from its first event, and a
 * subscriber who leaves letting go of its task's channel at once. Taken when
 * the handler is called, before its stream runs: the transports read
 * `dropped` at once.
 *
 * @internal
 */
export const bounding = (handler: RequestHandler, subscriptions: Subscriptions): RequestHandler => ({
  ...handler,
  sendMessageStream: (params, context) => subscriptions.reading(context, handler.sendMessageStream(params, context)),
  resubscribe: (params, context) => {
    subscriptions.subscribing(context)
    return subscriptions.reading(context, handler.resubscribe(params, context))
  }
})

/**
 * The request handler's channels (see `channel.ts`), with what each
 * subscription (SubscribeToTask) holds noted under its call: `close` lets go
 * of it at once when its reader leaves.
 *
 * @internal
 */
export interface Subscriptions {
  /** For the request handler. */
  readonly channels: internalChannel.Channels
  /** Notes that the call `context` subscribes. */
  readonly subscribing: (context: object) => void
  /** Stops what the subscription of the call `context` listens with. */
  readonly close: (context: object) => void
  /** Whether the stream of the call `context`, noted as subscribing, was closed. */
  readonly closed: (context: object) => boolean
  /**
   * Hands `onBus` each channel opened from now on for the task as the call
   * `context` sees it (its caller's), before its first event: how a
   * subscription goes on to the task's next run. What stops the watch.
   */
  readonly watch: (
    taskId: string,
    context: ServerCallContext,
    onBus: (channel: internalChannel.Channel) => void
  ) => () => void
  /**
   * Runs `stop` when the stream of the call `context` is closed, at once if
   * it was: what a subscription holds beyond its followers of a channel. What takes
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
   * `slowReader.ts`): the events its task's channel delivers to the call
   * are counted against those its reader takes.
   */
  readonly reading: <A, E, R>(
    context: object,
    stream: Stream.Stream<A, E, R>
  ) => Stream.Stream<A, E | UnsupportedOperationError, R>
  /** Resolves once the reader of the call `context` is dropped; undefined for a call that does not stream. */
  readonly dropped: (context: object) => Promise<void> | undefined
}

/**
 * The channel as a subscription sees it: what follows it is ended when the
 * subscription's stream is closed. A stream parked on its task's next event
 * would see that its reader left only at that event; a client that
 * subscribes and drops, over and over, to a task that runs long without news
 * would pile its followers up meanwhile.
 */
const noting = (channel: internalChannel.Channel, noted: Set<() => void>): internalChannel.Channel => {
  const seen: internalChannel.Channel = {
    taskId: channel.taskId,
    get ending() {
      return channel.ending
    },
    get taskPublished() {
      return channel.taskPublished
    },
    appended: () => channel.appended(),
    stopAppending: () => channel.stopAppending(),
    publish: (event) => channel.publish(event),
    tap: (onEvent) => channel.tap(onEvent),
    ran: () => channel.ran(),
    finished: () => channel.finished(),
    // The bus's overloads, one per event name, as the channel itself takes them.
    on: (eventName: "event" | "finished", listener: EventListener | FinishedListener) => (
      channel.on(eventName as "event", listener as EventListener), seen
    ),
    off: (eventName: "event" | "finished", listener: EventListener | FinishedListener) => (
      channel.off(eventName as "event", listener as EventListener), seen
    ),
    once: (eventName: "event" | "finished", listener: EventListener | FinishedListener) => (
      channel.once(eventName as "event", listener as EventListener), seen
    ),
    removeAllListeners: (eventName) => (channel.removeAllListeners(eventName), seen),
    follow: (follower) => {
      const unfollow = channel.follow(follower)
      const stop = () => {
        unfollow()
        follower.finished()
      }
      noted.add(stop)
      return () => {
        noted.delete(stop)
        unfollow()
      }
    }
  }
  return seen
}

/** @internal */
export const makeSubscriptions = (): Subscriptions => {
  const channels = internalChannel.makeChannels()
  // Per subscribing call, what to stop when its stream is closed.
  const stops = new WeakMap<object, Set<() => void>>()
  // The subscriptions watching for their task's next channel, by task id.
  const watchers = new Map<
    string,
    Set<{ readonly context: ServerCallContext; readonly onBus: (channel: internalChannel.Channel) => void }>
  >()
  const idle = new Set<() => void>()
  let shuttingDown = false
  const readers = new WeakMap<object, slowReader.Reader>()
  return {
    channels: {
      open: (taskId, context, append, retry) => {
        const opened = channels.open(taskId, context, append, retry)
        const channel = opened.channel
        if (opened.opened) {
          // A new run of the task: each subscription of its caller waiting for it takes it from its first event,
          // its reader counting what the run delivers as for the run it started with.
          for (const watcher of watchers.get(taskId) ?? []) {
            if (channels.get(taskId, watcher.context) !== channel) continue
            readers.get(watcher.context)?.listen(channel)
            watcher.onBus(channel)
          }
        }
        readers.get(context)?.listen(channel)
        return opened
      },
      get: (taskId, context) => {
        const channel = channels.get(taskId, context)
        if (channel === undefined) return undefined
        readers.get(context)?.listen(channel)
        const noted = stops.get(context)
        return noted === undefined ? channel : noting(channel, noted)
      }
    },
    reading: (context, stream) => {
      const reader = slowReader.makeReader()
      readers.set(context, reader)
      return reader.stream(stream)
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
