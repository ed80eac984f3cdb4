/**
 * An in-memory `TaskStore` that forgets: the SDK's `InMemoryTaskStore`
 * (same tenant and owner scoping, same copies, same listing) keeps every
 * task for the life of the process, this one drops ended tasks after a
 * retention and beyond a count, and paused ones after a retention of their
 * own. Running tasks are always kept.
 *
 * The SDK's interface has no delete, so eviction happens inside the store's
 * own calls. Each class of task is a queue in order of last save (a save
 * moves its task to the back), so the oldest is always at the front and
 * every call does amortised O(1) eviction work, never a scan.
 *
 * @internal
 */
import { type ListTasksRequest, type ListTasksResponse, type Task, TaskState } from "@a2a-js/sdk"
import { RequestMalformedError } from "@a2a-js/sdk/errors"
import { type OwnerResolver, resolveUserScope, type ServerCallContext, type TaskStore } from "@a2a-js/sdk/server"
import * as Duration from "effect/Duration"
import * as taskState from "../../wire/taskState.js"
import * as internalAuthentication from "../handler/authentication.js"

/** @internal */
export interface Options {
  /** How long an ended task is kept after its last save. */
  readonly retention?: Duration.DurationInput | undefined
  /** How many ended tasks are kept at most, over all tenants and owners. */
  readonly maxFinished?: number | undefined
  /** How long a task paused for input or auth is kept after its last save. */
  readonly interruptedRetention?: Duration.DurationInput | undefined
  /** The time in milliseconds; tests move it by hand. */
  readonly now: () => number
  readonly ownerResolver?: OwnerResolver | undefined
}

/** @internal */
export const defaults = {
  retention: Duration.hours(1),
  maxFinished: 10_000,
  interruptedRetention: Duration.hours(24)
} as const

interface Bucket {
  readonly tenant: string
  readonly owner: string
  readonly tasks: Map<string, Entry>
}

interface Entry {
  task: Task
  readonly bucket: Bucket
  savedAt: number
  queue: Queue | undefined
  prev: Entry | undefined
  next: Entry | undefined
}

// A doubly linked list through the entries themselves: removing a task from
// the middle (saved again, or moved to another class) is O(1), and so is
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

// The SDK's page size when none is asked for, which it does not export.
const defaultPageSize = 50

// The SDK's page token, which it does not export: base64 of `timestamp|id`. A token that does not
// decode is the caller's mistake (-32602), as the SDK's stores report it.
const encodePageToken = (timestamp: string, id: string): string => Buffer.from(`${timestamp}|${id}`).toString("base64")

const decodePageToken = (pageToken: string): { readonly timestamp: string; readonly id: string } => {
  const [timestamp = "", ...idParts] = Buffer.from(pageToken, "base64").toString("utf-8").split("|")
  if (idParts.length === 0) throw new RequestMalformedError("Invalid page token format.")
  return { timestamp, id: idParts.join("|") }
}

/** Told of each task the store forgets, with the scope it was kept under. @internal */
export type Forgotten = (taskId: string, tenant: string, owner: string) => void

const forgottenKey = Symbol.for("effect-a2a/MemoryTaskStore/forgotten")

/**
 * Tells `listener` of each task `store` forgets, when `store` is a bounded
 * one; false otherwise, when nothing will be told.
 *
 * @internal
 */
export const whenForgotten = (store: TaskStore, listener: Forgotten): boolean => {
  const listeners = (store as { readonly [forgottenKey]?: Array<Forgotten> })[forgottenKey]
  listeners?.push(listener)
  return listeners !== undefined
}

/**
 * The bounded store. Tasks are copied in on save and out on load and list,
 * as in the SDK's store: the request handler mutates the tasks it holds.
 *
 * @internal
 */
export const make = (options: Options): TaskStore => {
  const { now } = options
  const ownerResolver = options.ownerResolver ?? resolveUserScope
  const maxFinished = options.maxFinished ?? defaults.maxFinished
  const finished = new Queue(Duration.toMillis(options.retention ?? defaults.retention))
  const interrupted = new Queue(Duration.toMillis(options.interruptedRetention ?? defaults.interruptedRetention))
  const tenants = new Map<string, Map<string, Bucket>>()

  const queueOf = (state: TaskState | undefined): Queue | undefined =>
    taskState.isTerminal(state) ? finished : taskState.isPaused(state) ? interrupted : undefined

  const bucketOf = (context: ServerCallContext): Bucket | undefined =>
    tenants.get(context.tenant ?? "")?.get(ownerResolver(context))

  const forgotten: Array<Forgotten> = []
  const forget = (entry: Entry): void => {
    entry.queue?.remove(entry)
    const { bucket } = entry
    bucket.tasks.delete(entry.task.id)
    for (const listener of forgotten) listener(entry.task.id, bucket.tenant, bucket.owner)
    // Empty buckets go too, or callers who each came once would be kept forever.
    if (bucket.tasks.size > 0) return
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a bucket is always under its tenant: a miss is a bug, and should throw
    const owners = tenants.get(bucket.tenant)!
    owners.delete(bucket.owner)
    if (owners.size === 0) tenants.delete(bucket.tenant)
  }

  const expire = (queue: Queue, at: number): void => {
    while (queue.head !== undefined && at - queue.head.savedAt >= queue.retentionMs) forget(queue.head)
  }

  // Called first by every operation: what retention has passed is never read.
  const expireAll = (at: number): void => {
    expire(finished, at)
    expire(interrupted, at)
  }

  const store: TaskStore = {
    async save(task, context) {
      const at = now()
      expireAll(at)
      const tenant = context.tenant ?? ""
      const owner = ownerResolver(context)
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
      const copy = structuredClone(task)
      let entry = bucket.tasks.get(task.id)
      if (entry === undefined) {
        entry = { task: copy, bucket, savedAt: at, queue: undefined, prev: undefined, next: undefined }
        bucket.tasks.set(task.id, entry)
      } else {
        entry.queue?.remove(entry)
        entry.task = copy
        entry.savedAt = at
      }
      queueOf(copy.status?.state)?.push(entry)
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a queue with entries has a head: a miss is a bug, and should throw
      while (finished.size > maxFinished) forget(finished.head!)
    },

    async load(taskId, context) {
      expireAll(now())
      const entry = bucketOf(context)?.tasks.get(taskId)
      return entry === undefined ? undefined : structuredClone(entry.task)
    },

    // The SDK's `InMemoryTaskStore.list`, over the tasks kept.
    async list(params: ListTasksRequest, context): Promise<ListTasksResponse> {
      expireAll(now())
      const {
        contextId,
        includeArtifacts = false,
        pageSize = defaultPageSize,
        pageToken,
        status,
        statusTimestampAfter
      } = params
      const bucket = bucketOf(context)
      let tasks = bucket === undefined ? [] : Array.from(bucket.tasks.values(), (entry) => entry.task)
      if (contextId) tasks = tasks.filter((task) => task.contextId === contextId)
      if (status !== undefined && status !== TaskState.TASK_STATE_UNSPECIFIED) {
        tasks = tasks.filter((task) => task.status?.state === status)
      }
      if (statusTimestampAfter) {
        const after = new Date(statusTimestampAfter).getTime()
        tasks = tasks.filter((task) => task.status?.timestamp && new Date(task.status.timestamp).getTime() > after)
      }
      tasks.sort((a, b) => {
        const timeA = a.status?.timestamp || ""
        const timeB = b.status?.timestamp || ""
        return timeB !== timeA ? timeB.localeCompare(timeA) : b.id.localeCompare(a.id)
      })
      const totalSize = tasks.length
      if (pageToken) {
        const cursor = decodePageToken(pageToken)
        const index = tasks.findIndex((task) =>
          (task.status?.timestamp || "") === cursor.timestamp && task.id === cursor.id
        )
        tasks = index === -1 ? [] : tasks.slice(index + 1)
      }
      const page = tasks.slice(0, pageSize)
      const last = page[page.length - 1]
      return {
        tasks: page.map((task) => {
          const copy = structuredClone(task)
          if (!includeArtifacts) copy.artifacts = []
          return copy
        }),
        nextPageToken: last !== undefined && tasks.length > page.length
          ? encodePageToken(last.status?.timestamp || "", last.id)
          : "",
        pageSize,
        totalSize
      }
    }
  }
  ;(store as { [forgottenKey]?: Array<Forgotten> })[forgottenKey] = forgotten
  return internalAuthentication.withHeldElsewhere(store, async (taskId, context) => {
    const owner = ownerResolver(context)
    for (const bucket of tenants.get(context.tenant ?? "")?.values() ?? []) {
      if (bucket.owner !== owner && bucket.tasks.has(taskId)) return true
    }
    return false
  })
}
