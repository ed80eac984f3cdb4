/**
 * The bookkeeping of a bounded in-memory task store, whatever shape the
 * store has: tasks by tenant, owner and id; ended tasks forgotten after a
 * retention and beyond a count, paused ones after a retention of their own,
 * running ones always kept; and listeners told of each task forgotten (the
 * push configs of a forgotten task go with it).
 *
 * Each class of task is a queue in order of last write (a write moves its
 * task to the back), so the oldest is always at the front and every call
 * does amortised O(1) eviction work, never a scan.
 *
 * The native memory store (`memoryStore.ts`) keeps its tasks here.
 *
 * @internal
 */
import type { Task } from "@a2a-js/sdk"
import * as Duration from "effect/Duration"
import * as taskState from "../../wire/taskState.js"

/** @internal */
export interface Bounds {
  /** How long an ended task is kept after its last write. */
  readonly retention?: Duration.DurationInput | undefined
  /** How many ended tasks are kept at most, over all tenants and owners. */
  readonly maxFinished?: number | undefined
  /** How long a task paused for input or auth is kept after its last write. */
  readonly interruptedRetention?: Duration.DurationInput | undefined
}

/** The bounds of a store whose options name none, as the SDK-shaped memory store has them. @internal */
export const defaults = {
  retention: Duration.hours(1),
  maxFinished: 10_000,
  interruptedRetention: Duration.hours(24)
} as const

/** Told of each task the store forgets, with the scope it was kept under. @internal */
export type Forgotten = (taskId: string, tenant: string, owner: string) => void

interface Bucket {
  readonly tenant: string
  readonly owner: string
  readonly tasks: Map<string, Entry>
}

/** A task kept, with its place in the queues. @internal */
export interface Entry {
  task: Task
  readonly bucket: Bucket
  writtenAt: number
  queue: Queue | undefined
  prev: Entry | undefined
  next: Entry | undefined
}

// A doubly linked list through the entries themselves: removing a task from
// the middle (written again, or moved to another class) is O(1), and so is
// reading the oldest. A `Map` used as a queue would leave the deleted slots at
// its front for every new iterator to step over until it rehashes.
class Queue {
  head: Entry | undefined = undefined
  tail: Entry | undefined = undefined
  size = 0
  constructor(readonly retentionMs: number) {}

  push(entry: Entry): void {
    entry.queue = this
    entry.prev = this.tail
    entry.next = undefined
    if (this.tail === undefined) this.head = entry
    else this.tail.next = entry
    this.tail = entry
    this.size++
  }

  remove(entry: Entry): void {
    if (entry.prev === undefined) this.head = entry.next
    else entry.prev.next = entry.next
    if (entry.next === undefined) this.tail = entry.prev
    else entry.next.prev = entry.prev
    entry.queue = entry.prev = entry.next = undefined
    this.size--
  }
}

/** @internal */
export interface Shelf {
  /** Forgets what retention has passed at `at`: called first by every operation, so that it is never read. */
  readonly expire: (at: number) => void
  readonly get: (tenant: string, owner: string, taskId: string) => Entry | undefined
  /** The tasks of one tenant and owner. */
  readonly tasksOf: (tenant: string, owner: string) => Iterable<Task>
  /** Whether another owner of `tenant` holds a task `taskId`. */
  readonly heldElsewhere: (tenant: string, owner: string, taskId: string) => boolean
  /** Keeps `task` as written at `at`: a new entry, or the one of its id, moved to the back of its class. */
  readonly put: (tenant: string, owner: string, task: Task, at: number) => Entry
  /** `entry`, whose task was changed in place, as written at `at`. */
  readonly touch: (entry: Entry, at: number) => void
  readonly whenForgotten: (listener: Forgotten) => void
}

/** @internal */
export const make = (bounds: Bounds): Shelf => {
  const maxFinished = bounds.maxFinished ?? defaults.maxFinished
  const finished = new Queue(Duration.toMillis(bounds.retention ?? defaults.retention))
  const interrupted = new Queue(Duration.toMillis(bounds.interruptedRetention ?? defaults.interruptedRetention))
  const tenants = new Map<string, Map<string, Bucket>>()
  const listeners: Array<Forgotten> = []

  const queueOf = (task: Task): Queue | undefined => {
    const state = task.status?.state
    return taskState.isTerminal(state) ? finished : taskState.isPaused(state) ? interrupted : undefined
  }

  const forget = (entry: Entry): void => {
    entry.queue?.remove(entry)
    const { bucket } = entry
    bucket.tasks.delete(entry.task.id)
    for (const listener of listeners) listener(entry.task.id, bucket.tenant, bucket.owner)
    // Empty buckets go too, or callers who each came once would be kept forever.
    if (bucket.tasks.size > 0) return
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a bucket is always under its tenant: a miss is a bug, and should throw
    const owners = tenants.get(bucket.tenant)!
    owners.delete(bucket.owner)
    if (owners.size === 0) tenants.delete(bucket.tenant)
  }

  const expireQueue = (queue: Queue, at: number): void => {
    while (queue.head !== undefined && at - queue.head.writtenAt >= queue.retentionMs) forget(queue.head)
  }

  const touch = (entry: Entry, at: number): void => {
    entry.queue?.remove(entry)
    entry.writtenAt = at
    queueOf(entry.task)?.push(entry)
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a queue with entries has a head: a miss is a bug, and should throw
    while (finished.size > maxFinished) forget(finished.head!)
  }

  const bucketOf = (tenant: string, owner: string) => tenants.get(tenant)?.get(owner)

  return {
    expire: (at) => {
      expireQueue(finished, at)
      expireQueue(interrupted, at)
    },
    get: (tenant, owner, taskId) => bucketOf(tenant, owner)?.tasks.get(taskId),
    tasksOf: (tenant, owner) => Array.from(bucketOf(tenant, owner)?.tasks.values() ?? [], (entry) => entry.task),
    heldElsewhere: (tenant, owner, taskId) => {
      for (const bucket of tenants.get(tenant)?.values() ?? []) {
        if (bucket.owner !== owner && bucket.tasks.has(taskId)) return true
      }
      return false
    },
    put: (tenant, owner, task, at) => {
      let owners = tenants.get(tenant)
      if (owners === undefined) {
        owners = new Map()
        tenants.set(tenant, owners)
      }
      let bucket = owners.get(owner)
      if (bucket === undefined) {
        bucket = { tenant, owner, tasks: new Map() }
        owners.set(owner, bucket)
      }
      let entry = bucket.tasks.get(task.id)
      if (entry === undefined) {
        entry = { task, bucket, writtenAt: at, queue: undefined, prev: undefined, next: undefined }
        bucket.tasks.set(task.id, entry)
      } else {
        entry.task = task
      }
      touch(entry, at)
      return entry
    },
    touch,
    whenForgotten: (listener) => {
      listeners.push(listener)
    }
  }
}
