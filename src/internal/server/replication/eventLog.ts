/**
 * A task's event log: every event a run publishes, numbered 1, 2, 3 … per
 * task, to read or follow from any cursor, so that a stream cut short (or
 * opened on another replica) resumes after its last event. The in-memory log
 * (`memoryEventLog.ts`) serves one process; `pgEventLog.ts` shares one among
 * replicas.
 *
 * Both follow a task the same way (`makeTails`): one reader per task and
 * process reads after what it holds; when nothing is new, it waits for a
 * wake-up of the task, taken before that read so that an entry written
 * between the read and the wait still wakes it. Its followers take what it
 * read.
 *
 * Events are kept as JSON text and decoded by each follower: what a follower
 * gets is the same on both logs, and its own copy.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/** One event of a task's log: its place (1, 2, 3 … per task, no gaps) and the event as JSON-safe data. */
export interface Entry {
  readonly seq: number
  readonly event: unknown
}

/** @internal */
export class EventLogError extends Schema.TaggedError<EventLogError>("effect-a2a/EventLogError")("EventLogError", {
  reason: Schema.Literal("Unavailable", "Conflict", "Decode", "MissingPackage"),
  message: Schema.String
}) {}

/** @internal */
export interface EventLog {
  /** The last seq written for the task, 0 for none. */
  readonly last: (taskId: string) => Effect.Effect<number, EventLogError>
  /**
   * Queues `event` as number `seq` of the task; returns at once (never blocks
   * the publisher, the SDK's bus is synchronous). Appends of one task reach
   * the log in call order; a failed append is retried with backoff until
   * `close`, and logged once (task id, seq) — never lost silently. A seq
   * already taken by another writer is a Conflict, logged as an error.
   */
  readonly append: (taskId: string, seq: number, event: unknown) => void
  /** Resolves once every append queued so far is written (or given up): for tests, shutdown and the final event. */
  readonly flush: Effect.Effect<void>
  /**
   * Every entry of the task after `after`, in order, then each new one as it
   * is written, on any replica: no gap, no repeat. Never ends by itself (the
   * caller takes until a final event). Fails only if the log stays
   * unreachable longer than `unavailableAfter` (an option, default 30 s).
   */
  readonly follow: (taskId: string, after: number) => Stream.Stream<Entry, EventLogError>
  /** `follow` as an iterator, for a consumer that iterates (its failure an `EventLogError` thrown). */
  readonly iterate: (taskId: string, after: number) => AsyncIterableIterator<Entry>
  /** The entries after `after` now in the log. */
  readonly read: (taskId: string, after: number) => Effect.Effect<ReadonlyArray<Entry>, EventLogError>
  /** Marks the task finished: its entries go `retention` after (an option, default 1 hour), by a sweep. */
  readonly finish: (taskId: string) => void
  /**
   * Wakes the task's nudge watchers on every replica, with nothing written:
   * a change outside the log (a cancel in the task store) that the replica
   * running the task should see at once rather than at its next poll.
   */
  readonly nudge: (taskId: string) => Effect.Effect<void, EventLogError>
  /** A watcher of the task's nudges for the scope: each `next()` is the first nudge after it is called. */
  readonly nudges: Wakeups["watch"]
}

/** The options of both logs. @internal */
export interface Options {
  /** How long a finished task's entries stay; 1 hour by default. */
  readonly retention?: Duration.DurationInput | undefined
  /** How long `follow` waits for an unreachable log before it fails; 30 seconds by default. */
  readonly unavailableAfter?: Duration.DurationInput | undefined
}

/** @internal */
export interface MemoryOptions extends Options {
  /**
   * The entries kept per task (10 000 by default): past it the oldest go, and
   * a follower that far behind skips them.
   */
  readonly maxEntries?: number | undefined
}

export const defaultRetention = Duration.hours(1)
export const defaultUnavailableAfter = Duration.seconds(30)

/** The delays between attempts at the log: from 50 ms, doubling, at most 1 s apart. */
export const backoff = Schedule.exponential("50 millis").pipe(Schedule.either(Schedule.spaced("1 second")))

/** A sweep of finished tasks runs as often as their retention, at least every minute. */
export const sweepEvery = (retention: Duration.Duration): Duration.Duration =>
  Duration.min(retention, Duration.minutes(1))

/**
 * The wake-ups of the tasks followed in this process: a writer (or a
 * notification from another replica, or a poll) signals a task, and each of
 * its followers reads the log again.
 *
 * @internal
 */
export interface Wakeups {
  /**
   * Registers a follower of the task for the scope. Each `next()` is the
   * first wake-up after the moment it is called, awaited later.
   */
  readonly watch: (taskId: string) => Effect.Effect<{ readonly next: () => Effect.Effect<void> }, never, Scope.Scope>
  readonly signal: (taskId: string) => void
  readonly signalAll: () => void
  /** The tasks followed now. */
  readonly followed: () => ReadonlyArray<string>
}

/** @internal */
export const makeWakeups = (): Wakeups => {
  const tasks = new Map<string, { changed: Deferred.Deferred<void>; count: number }>()
  const fresh = () => Deferred.unsafeMake<void>(FiberId.none)
  const wake = (watched: { changed: Deferred.Deferred<void> }) => {
    const changed = watched.changed
    watched.changed = fresh()
    Deferred.unsafeDone(changed, Exit.void)
  }
  return {
    watch: (taskId) =>
      Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => {
            let watched = tasks.get(taskId)
            if (watched === undefined) {
              watched = { changed: fresh(), count: 0 }
              tasks.set(taskId, watched)
            }
            watched.count++
            return watched
          }),
          (watched) =>
            Effect.sync(() => {
              watched.count--
              if (watched.count === 0 && tasks.get(taskId) === watched) tasks.delete(taskId)
            })
        ),
        (watched) => ({
          next: () => {
            const changed = watched.changed
            return Deferred.await(changed)
          }
        })
      ),
    signal: (taskId) => {
      const watched = tasks.get(taskId)
      if (watched !== undefined) wake(watched)
    },
    signalAll: () => tasks.forEach(wake),
    followed: () => [...tasks.keys()]
  }
}

/** A row of the log as stored: its seq and the event's JSON text. @internal */
export interface Row {
  readonly seq: number
  readonly text: string
}

/** What `follow` reads and waits on. @internal */
export interface Source {
  /** Up to `limit` rows after `after`, in order. */
  readonly read: (taskId: string, after: number, limit: number) => Effect.Effect<ReadonlyArray<Row>, EventLogError>
  readonly wakeups: Wakeups
  readonly unavailableAfter: Duration.Duration
  /** Since when (epoch millis) the log has been found unreachable, if it is. */
  readonly unreachableSince: () => number | undefined
}

/** The followers of a process, sharing one reader per task. @internal */
export interface Tails {
  readonly follow: EventLog["follow"]
  readonly iterate: EventLog["iterate"]
  /**
   * A row known written (by this replica's append, or carried by a wake-up):
   * when it is the next one of a followed task, its followers get it with no
   * read. False when it is past the next one (the rows between are unknown
   * here): then a read must find them.
   */
  readonly offer: (taskId: string, row: Row) => boolean
  /**
   * Whether the task is followed here and its reader has not reached `seq`
   * yet. One at or before where the reader started (a follower's cursor past
   * the log's last) is read by no reader: it wakes the followers reading on
   * their own, further behind, which may want it.
   */
  readonly behind: (taskId: string, seq: number) => boolean
}

// A follower reads at most this many entries at once.
const page = 500
// The rows a task's shared reader holds for its followers; one further behind reads on its own.
const kept = 1_000

/** One followed task: every row of the log in (`base`, `last`], read once for all its followers here. */
interface Tail {
  base: number
  readonly rows: Array<Row>
  /** The followers waiting for a row or a failure. */
  waiting: Set<() => void>
  /** How many times they were woken: a follower reading on its own knows whether a row came during its read. */
  woken: number
  failure: EventLogError | undefined
  followers: number
}

const lastOf = (tail: Tail): number => tail.rows.at(-1)?.seq ?? tail.base

/** The index of the first row after `after`, by binary search: rows are in seq order. @internal */
export const firstAfter = (rows: ReadonlyArray<Row>, after: number): number => {
  let low = 0
  let high = rows.length
  while (low < high) {
    const middle = (low + high) >>> 1
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- middle < high <= rows.length
    if (rows[middle]!.seq <= after) low = middle + 1
    else high = middle
  }
  return low
}

/**
 * The followers of `source`: the entries of a task after a cursor, then each
 * new one. Each task followed here has one reader, for all its followers:
 * woken, it reads what is new once (a page at a time), and each follower
 * decodes its own copy. A row offered (written here, or carried by a
 * notification) that is the next one spares the read altogether. A follower
 * further behind than the reader holds reads on its own until it catches up.
 *
 * A read the log refuses is retried up to `unavailableAfter`; a follower with
 * nothing to read fails once the log has been unreachable that long.
 *
 * @internal
 */
export const makeTails = (source: Source): Effect.Effect<Tails, never, Scope.Scope> =>
  Effect.gen(function*() {
    const tails = new Map<string, Tail>()
    const fork = yield* FiberSet.makeRuntime<never>()
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())
    const readers = new Map<Tail, Fiber.RuntimeFiber<void>>()
    // Set before the readers are interrupted (finalizers run last added first).
    let logClosed = false
    yield* Effect.addFinalizer(() => Effect.sync(() => void (logClosed = true)))
    const closedError = () => new EventLogError({ reason: "Unavailable", message: "The event log closed" })
    const wake = (tail: Tail) => {
      tail.woken++
      const waiting = tail.waiting
      tail.waiting = new Set()
      waiting.forEach((resume) => resume())
    }
    const push = (tail: Tail, rows: ReadonlyArray<Row>) => {
      const last = lastOf(tail)
      for (const row of rows) if (row.seq > last) tail.rows.push(row)
      if (tail.rows.length > kept) tail.base = tail.rows.splice(0, tail.rows.length - kept).at(-1)?.seq ?? tail.base
      wake(tail)
    }
    const retried = (taskId: string, after: number) =>
      source.read(taskId, after, page).pipe(
        Effect.retry({
          schedule: backoff.pipe(Schedule.upTo(source.unavailableAfter)),
          while: (error) => error.reason === "Unavailable"
        })
      )

    // Waits for a wake-up; fails once the log has been unreachable `unavailableAfter` meanwhile.
    const unavailableMillis = Duration.toMillis(source.unavailableAfter)
    const idle = (woken: Effect.Effect<void>): Effect.Effect<void, EventLogError> =>
      woken.pipe(
        Effect.timeoutOption(Duration.min(source.unavailableAfter, Duration.seconds(1))),
        Effect.flatMap(Option.match({
          onSome: () => Effect.void,
          onNone: () =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const since = source.unreachableSince()
              return since !== undefined && now - since >= unavailableMillis
                ? Effect.fail(
                  new EventLogError({
                    reason: "Unavailable",
                    message: `The event log has been unreachable for ${now - since} ms`
                  })
                )
                : idle(woken)
            })
        }))
      )

    // The task's reader: read what is new, then wait for a wake-up taken before that read, so that a row written
    // during or after the read still wakes it. A short page was all the log held when read: reading again at once
    // would only find nothing, a query per wake-up wasted. Its failure is its followers'.
    const reader = (taskId: string, tail: Tail) =>
      Effect.scoped(Effect.flatMap(source.wakeups.watch(taskId), (watcher) => {
        const loop: Effect.Effect<never, EventLogError> = Effect.suspend(() => {
          const woken = watcher.next()
          return Effect.flatMap(retried(taskId, lastOf(tail)), (rows) => {
            if (rows.length > 0) push(tail, rows)
            return rows.length === page ? loop : Effect.zipRight(idle(woken), loop)
          })
        })
        return loop
      })).pipe(
        Effect.catchAll((error) => Effect.sync(() => failAll(tail, error))),
        // Interrupted with followers left: the log closed under them, and they would wait forever.
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (tail.followers > 0) failAll(tail, closedError())
          })
        )
      )
    const failAll = (tail: Tail, error: EventLogError) => {
      tail.failure = error
      wake(tail)
    }

    const acquire = (taskId: string, after: number): Tail => {
      const held = tails.get(taskId)
      if (held !== undefined && held.failure === undefined) {
        held.followers++
        return held
      }
      const tail: Tail = { base: after, rows: [], waiting: new Set(), woken: 0, failure: undefined, followers: 1 }
      // The log closed: no reader would start, and its follower would wait forever.
      if (logClosed) tail.failure = closedError()
      else {
        tails.set(taskId, tail)
        readers.set(tail, fork(reader(taskId, tail)))
      }
      return tail
    }
    const release = (taskId: string, tail: Tail) => {
      tail.followers--
      if (tail.followers > 0) return
      if (tails.get(taskId) === tail) tails.delete(taskId)
      readers.get(tail)?.unsafeInterruptAsFork(FiberId.none)
      readers.delete(tail)
    }

    // A follower is a plain iterator, not a stream: it is the hot path of a replica with many subscribers, and
    // its consumer (the SDK's response stream) iterates. Its `return` lets go at once, even while it waits.
    const iterate = (taskId: string, after: number): AsyncIterableIterator<Entry> => {
      const tail = acquire(taskId, after)
      let cursor = after
      let ready: Array<Entry> = []
      let at = 0
      // A row of `ready`'s page that is not JSON: this follower's failure once it has taken the entries before it.
      let broken: EventLogError | undefined
      let closed = false
      let waiting: (() => void) | undefined
      // Interrupts this follower's own read when it lets go.
      const reading = new AbortController()
      const close = () => {
        if (closed) return
        closed = true
        reading.abort()
        release(taskId, tail)
        if (waiting !== undefined) {
          tail.waiting.delete(waiting)
          waiting()
        }
      }
      const fail = (error: EventLogError): never => {
        close()
        throw error
      }
      const wait = () =>
        new Promise<void>((resume) => {
          waiting = resume
          tail.waiting.add(resume)
        }).then(() => void (waiting = undefined))
      const next = async (): Promise<IteratorResult<Entry, undefined>> => {
        while (!closed) {
          const value = ready[at]
          if (value !== undefined) {
            at++
            return { done: false, value }
          }
          if (broken !== undefined) fail(broken)
          if (tail.failure !== undefined) fail(tail.failure)
          let rows: ReadonlyArray<Row>
          if (cursor < tail.base) {
            const held = tail.rows.length > 0
            const woken = tail.woken
            const read = await runPromise(Effect.either(retried(taskId, cursor)), { signal: reading.signal }).catch(
              (error: unknown) => closed ? undefined : Promise.reject(error)
            )
            if (closed || read === undefined) break
            rows = Either.getOrElse(read, fail)
            if (rows.length === 0) {
              // Nothing after the cursor, yet the reader held later rows before this read: those between went
              // (retention). Held none: its base is the cursor of the follower that opened it, which may be past
              // the log's last; read again once a row comes.
              if (held) cursor = tail.base
              else if (tail.woken === woken) await wait()
              continue
            }
          } else {
            const from = firstAfter(tail.rows, cursor)
            if (from === tail.rows.length) {
              await wait()
              continue
            }
            rows = tail.rows.slice(from, from + page)
          }
          // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- both ways above leave at least one row
          cursor = rows[rows.length - 1]!.seq
          const decoded = decodeUntilBroken(rows)
          ready = decoded.entries
          broken = decoded.broken
          at = 0
        }
        return { done: true, value: undefined }
      }
      return {
        next,
        return: async () => {
          close()
          return { done: true, value: undefined }
        },
        [Symbol.asyncIterator]() {
          return this
        }
      }
    }

    const follow = (taskId: string, after: number): Stream.Stream<Entry, EventLogError> =>
      Stream.fromAsyncIterable({ [Symbol.asyncIterator]: () => iterate(taskId, after) }, (error) =>
        error as EventLogError)

    const offer = (taskId: string, row: Row): boolean => {
      const tail = tails.get(taskId)
      if (tail === undefined) {
        return true
      }
      const last = lastOf(tail)
      if (row.seq > last + 1) {
        return false
      }
      if (row.seq === last + 1) {
        push(tail, [row])
      } // Not past what the reader holds: only a follower behind it, reading on its own, may want it.
      else wake(tail)
      return true
    }

    const behind = (taskId: string, seq: number): boolean => {
      const tail = tails.get(taskId)
      if (tail === undefined) {
        return false
      }
      if (lastOf(tail) < seq) {
        return true
      }
      if (seq <= tail.base) {
        wake(tail)
      }
      return false
    }

    return { follow, iterate, offer, behind }
  })

/**
 * The JSON text of an event, or undefined (logged as an error) for one JSON
 * cannot carry: the caller drops it rather than fail the publisher.
 *
 * @internal
 */
export const encode = (
  runFork: <A, E>(effect: Effect.Effect<A, E>) => unknown,
  taskId: string,
  seq: number,
  event: unknown
): string | undefined => {
  try {
    const text = JSON.stringify(event)
    if (typeof text === "string") return text
  } catch {
    // reported below
  }
  runFork(
    Effect.logError("An event of a task is not JSON data and was not written to the event log").pipe(
      Effect.annotateLogs({ taskId, seq })
    )
  )
  return undefined
}

// The entries of the rows up to the first whose text is not JSON, and that one's failure.
const decodeUntilBroken = (
  rows: ReadonlyArray<Row>
): { readonly entries: Array<Entry>; readonly broken: EventLogError | undefined } => {
  const entries: Array<Entry> = []
  for (const row of rows) {
    try {
      entries.push({ seq: row.seq, event: JSON.parse(row.text) as unknown })
    } catch {
      return {
        entries,
        broken: new EventLogError({ reason: "Decode", message: `Entry ${row.seq} of the event log is not JSON` })
      }
    }
  }
  return { entries, broken: undefined }
}

/** Entries from their rows; a row whose text is not JSON fails them with `Decode`. @internal */
export const decodeRows = (rows: ReadonlyArray<Row>): Either.Either<Array<Entry>, EventLogError> => {
  const { broken, entries } = decodeUntilBroken(rows)
  return broken === undefined ? Either.right(entries) : Either.left(broken)
}

/** Logs an append whose seq another writer took. @internal */
export const conflict = (taskId: string, seq: number) =>
  Effect.logError("An event was not written to the event log: its seq is already taken (another writer of the task?)")
    .pipe(Effect.annotateLogs({ taskId, seq }))
