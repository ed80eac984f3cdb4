/**
 * A task's events in one process: the channel a run publishes on. Its
 * events are appended to the task store in the order published, those that
 * queued while an append was in flight in one append (a burst costs few
 * writes), and handed to the channel's listeners only once appended: what a
 * listener has, the store has, and GetTask shows.
 *
 * It is the SDK's `ExecutionEventBus` to the executor (its `publish`) and to
 * the listeners (`on`, `off`, `once`): the executor is the SDK's shape, and
 * the subscriptions and readers of the server listen as they listened to the
 * SDK's bus.
 *
 * @internal
 */
import type { Task } from "@a2a-js/sdk"
import {
  type AgentExecutionEvent,
  type EventListener,
  type ExecutionEventBus,
  type FinishedListener,
  resolveUserScope,
  type ServerCallContext
} from "@a2a-js/sdk/server"
import type * as taskFold from "../../wire/taskFold.js"

/**
 * Appends a batch of a task's events to its store: the task as they leave
 * it. A rejection fails the batch: its events reach no listener.
 *
 * @internal
 */
export type Append = (events: ReadonlyArray<taskFold.TaskEvent>) => Promise<Task | undefined>

/**
 * How a channel holds on to events its store refuses: retried, in order with
 * those that follow, for `retryMillis`; `gaveUp` hears of those it drops (and
 * of which task), when that time is over or its appends were stopped (a
 * shutdown).
 *
 * @internal
 */
export interface Retry {
  readonly retryMillis: number
  readonly gaveUp: (taskId: string, reason: "timeout" | "shutdown", error: unknown) => void
}

/**
 * What the request handler itself follows of a channel: each event with the
 * task as its batch left it in the store, and a failed append.
 *
 * @internal
 */
export interface Follower {
  readonly event: (event: AgentExecutionEvent, task: Task | undefined) => void
  readonly failed: (error: unknown) => void
  readonly finished: () => void
}

/** @internal */
export interface Channel extends ExecutionEventBus {
  readonly taskId: string
  /**
   * Resolves once every event published so far is appended, or its append
   * failed: a run's end waits for its final event to be in the store.
   */
  readonly appended: () => Promise<void>
  /** Follows the channel from its next event; what stops following. */
  readonly follow: (follower: Follower) => () => void
  /**
   * Hands each event published from now on to `onEvent` as it is handed on,
   * before any follower or listener has it (a run's stages, see
   * `runStages.ts`); what stops it.
   */
  readonly tap: (onEvent: (event: AgentExecutionEvent) => void) => () => void
  /** Whether its run has ended (`ran`) or `finished` was called: the channel takes no more runs. */
  readonly ending: boolean
  /**
   * Its run has ended: a message from now on starts a run on a channel of
   * its own, while this one's run stages end before `finished`.
   */
  readonly ran: () => void
  /** Whether a task event of its task was published on it. */
  readonly taskPublished: boolean
  /** Stops retrying what the store refused: a shutdown's deadline. What is left is dropped. */
  readonly stopAppending: () => void
}

// The task's own events go to its store; a bare message answers the caller and is no task's.
const stored = (taskId: string, event: AgentExecutionEvent): boolean =>
  event.kind === "task" ? event.data.id === taskId : event.kind !== "message" && event.data.taskId === taskId

// Retries of a refused append: at most this far apart.
const maxRetryDelay = 5_000

// The listeners of every channel no one listened to yet, never added to: a channel lives as long as its run, and
// most runs' channels are only followed (by the request that started the run), so their sets are made when needed.
const none: Set<never> = new Set()

/** `set` with `item`: a new set in place of {@link none}. */
const adding = <A>(set: Set<A>, item: A): Set<A> => (set === none ? new Set<A>() : set).add(item)

/** @internal */
export class TaskChannel implements Channel {
  ending = false
  taskPublished = false
  private finishing = false
  private stopped = false
  private retryTimer: ReturnType<typeof setTimeout> | undefined
  private wakeRetry: (() => void) | undefined
  private listeners: Set<EventListener> = none
  private onceListeners: Set<EventListener> = none
  private finishedListeners: Set<FinishedListener> = none
  private readonly followers = new Set<Follower>()
  private readonly taps = new Set<(event: AgentExecutionEvent) => void>()
  private pending: Array<AgentExecutionEvent> = []
  private inFlight: Promise<void> | undefined
  private done = false
  private drained: Array<() => void> | undefined

  constructor(
    readonly taskId: string,
    private readonly append: Append,
    private readonly retry: Retry,
    private readonly onDone: (channel: TaskChannel) => void
  ) {}

  publish(event: AgentExecutionEvent): void {
    if (this.done) return
    if (event.kind === "task" && event.data.id === this.taskId) this.taskPublished = true
    this.pending.push(event)
    if (this.inFlight === undefined) this.flush()
  }

  ran(): void {
    this.ending = true
  }

  finished(): void {
    if (this.finishing) return
    this.finishing = true
    this.ending = true
    if (this.inFlight === undefined) this.finish()
  }

  appended(): Promise<void> {
    return this.inFlight === undefined && this.pending.length === 0
      ? Promise.resolve()
      : new Promise((resolve) => (this.drained ??= []).push(resolve))
  }

  follow(follower: Follower): () => void {
    if (this.done) {
      follower.finished()
      return () => {}
    }
    this.followers.add(follower)
    return () => void this.followers.delete(follower)
  }

  tap(onEvent: (event: AgentExecutionEvent) => void): () => void {
    this.taps.add(onEvent)
    return () => void this.taps.delete(onEvent)
  }

  on(eventName: "event" | "finished", listener: EventListener | FinishedListener): this {
    if (eventName === "event") this.listeners = adding(this.listeners, listener as EventListener)
    else this.finishedListeners = adding(this.finishedListeners, listener as FinishedListener)
    return this
  }

  off(eventName: "event" | "finished", listener: EventListener | FinishedListener): this {
    if (eventName === "event") {
      this.listeners.delete(listener as EventListener)
      this.onceListeners.delete(listener as EventListener)
    } else this.finishedListeners.delete(listener as FinishedListener)
    return this
  }

  once(eventName: "event" | "finished", listener: EventListener | FinishedListener): this {
    if (eventName === "event") this.onceListeners = adding(this.onceListeners, listener as EventListener)
    else {
      const once: FinishedListener = () => {
        this.finishedListeners.delete(once)
        ;(listener as FinishedListener)()
      }
      this.finishedListeners = adding(this.finishedListeners, once)
    }
    return this
  }

  removeAllListeners(eventName?: "event" | "finished"): this {
    if (eventName === undefined || eventName === "event") {
      this.listeners.clear()
      this.onceListeners.clear()
    }
    if (eventName === undefined || eventName === "finished") this.finishedListeners.clear()
    return this
  }

  stopAppending(): void {
    this.stopped = true
    const wake = this.wakeRetry
    this.wakeRetry = undefined
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    this.retryTimer = undefined
    wake?.()
  }

  /** Appends what queued, in one append, then hands it on; again while more queued meanwhile. */
  private flush(): void {
    const batch = this.pending
    this.pending = []
    if (!batch.some((event) => stored(this.taskId, event))) {
      this.deliver(batch, undefined)
      this.settle()
      return
    }
    this.inFlight = this.appendRetried(batch).finally(() => {
      this.inFlight = undefined
      this.settle()
    })
  }

  private attempt(batch: ReadonlyArray<AgentExecutionEvent>): Promise<Task | undefined> {
    try {
      return this.append(batch.filter((event) => stored(this.taskId, event)))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Appends `batch`, then hands it on. Refused, its followers hear so once,
   * and it is tried again with what queued meanwhile, until the store takes
   * it or the retries end.
   */
  private async appendRetried(batch: ReadonlyArray<AgentExecutionEvent>): Promise<void> {
    let events = batch
    let since: number | undefined
    let delay = 100
    for (;;) {
      try {
        const task = await this.attempt(events)
        this.deliver(events, task)
        return
      } catch (error) {
        if (since === undefined) {
          since = performance.now()
          for (const follower of [...this.followers]) follower.failed(error)
        }
        if (this.stopped || performance.now() - since >= this.retry.retryMillis) {
          this.retry.gaveUp(this.taskId, this.stopped ? "shutdown" : "timeout", error)
          // The run stages still get what the store lost: the event log's subscribers on other replicas see the
          // run end rather than wait for it, as a push receiver does.
          for (const event of events) for (const onEvent of this.taps) onEvent(event)
          return
        }
        await new Promise<void>((resolve) => {
          this.wakeRetry = resolve
          this.retryTimer = setTimeout(resolve, delay)
        })
        this.retryTimer = undefined
        this.wakeRetry = undefined
        delay = Math.min(delay * 2, maxRetryDelay)
        events = [...events, ...this.pending]
        this.pending = []
      }
    }
  }

  private settle(): void {
    if (this.pending.length > 0) return this.flush()
    const drained = this.drained
    this.drained = undefined
    if (drained !== undefined) { for (const resolve of drained) resolve() }
    if (this.finishing) this.finish()
  }

  private deliver(batch: ReadonlyArray<AgentExecutionEvent>, task: Task | undefined): void {
    for (const event of batch) {
      for (const onEvent of this.taps) onEvent(event)
      for (const follower of [...this.followers]) follower.event(event, task)
      for (const listener of [...this.listeners]) listener(event)
      if (this.onceListeners.size > 0) {
        const once = [...this.onceListeners]
        this.onceListeners.clear()
        for (const listener of once) listener(event)
      }
    }
  }

  private finish(): void {
    if (this.done) return
    this.done = true
    this.onDone(this)
    for (const follower of [...this.followers]) follower.finished()
    this.followers.clear()
    for (const listener of [...this.finishedListeners]) listener()
    this.removeAllListeners()
  }
}

/** Who a call is for, as the SDK's stores and buses scope a task: its tenant and owner. */
const scopeKey = (taskId: string, context: ServerCallContext | undefined): string =>
  `${context?.tenant ?? ""}\u0000${context === undefined ? "unknown" : resolveUserScope(context)}\u0000${taskId}`

/**
 * The channels of the tasks with a run in progress (or a cancel being told),
 * by tenant, owner and task id.
 *
 * @internal
 */
export interface Channels {
  /**
   * The task's channel in progress for the call's scope, else a new one whose
   * events `append` writes; `opened` says which.
   */
  readonly open: (
    taskId: string,
    context: ServerCallContext,
    append: Append,
    retry: Retry
  ) => { readonly channel: Channel; readonly opened: boolean }
  readonly get: (taskId: string, context: ServerCallContext) => Channel | undefined
}

/** @internal */
export const makeChannels = (): Channels => {
  const channels = new Map<string, TaskChannel>()
  return {
    open: (taskId, context, append, retry) => {
      const key = scopeKey(taskId, context)
      const known = channels.get(key)
      if (known !== undefined && !known.ending) return { channel: known, opened: false }
      const channel = new TaskChannel(taskId, append, retry, (done) => {
        if (channels.get(key) === done) channels.delete(key)
      })
      channels.set(key, channel)
      return { channel, opened: true }
    },
    get: (taskId, context) => {
      const channel = channels.get(scopeKey(taskId, context))
      return channel === undefined || channel.ending ? undefined : channel
    }
  }
}
