/**
 * A task's event log: every event a run publishes, numbered 1, 2, 3 … per
 * task, to read or follow from any cursor, so that a stream cut short (or
 * opened on another replica) resumes after its last event. The in-memory log
 * here serves one process; `pgEventLog.ts` shares one among replicas.
 *
 * Both follow a task the same way (`follow`): read after the cursor; when
 * nothing is new, wait for a wake-up of the task, taken before that read so
 * that an entry written between the read and the wait still wakes it.
 *
 * Events are kept as JSON text and decoded on each read: what a follower
 * gets is the same on both logs, and its own copy.
 *
 * @internal
 */
import { Chunk, Clock, Deferred, Duration, Effect, Exit, FiberId, Option, Runtime, Schedule, Schema, Stream } from "effect"
import type * as Scope from "effect/Scope"

/** One event of a task's log: its place (1, 2, 3 … per task, no gaps) and the event as JSON-safe data. */
export interface Entry {
  readonly seq: number
  readonly event: unknown
}

/** @internal */
export class EventLogError extends Schema.TaggedError<EventLogError>("effect-a2a/EventLogError")("EventLogError", {
  reason: Schema.Literal("Unavailable", "Conflict", "Decode"),
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
export const sweepEvery = (retention: Duration.Duration): Duration.Duration => Duration.min(retention, Duration.minutes(1))

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

/** What `follow` reads and waits on. @internal */
export interface Source {
  /** Up to `limit` entries after `after`, in order. */
  readonly read: (taskId: string, after: number, limit: number) => Effect.Effect<ReadonlyArray<Entry>, EventLogError>
  readonly wakeups: Wakeups
  readonly unavailableAfter: Duration.Duration
  /** Since when (epoch millis) the log has been found unreachable, if it is. */
  readonly unreachableSince: () => number | undefined
}

// A follower reads at most this many entries at once.
const page = 500

/**
 * The entries of a task after `after`, then each new one: read, and when
 * nothing is new, wait for a wake-up. A read the log refuses is retried up to
 * `unavailableAfter`; a follower with nothing to read fails once the log has
 * been unreachable that long.
 *
 * @internal
 */
export const follow = (source: Source) => (taskId: string, after: number): Stream.Stream<Entry, EventLogError> =>
  Stream.unwrapScoped(Effect.map(source.wakeups.watch(taskId), (watcher) => {
    let cursor = after
    const read = Effect.suspend(() => source.read(taskId, cursor, page)).pipe(
      Effect.retry({
        schedule: backoff.pipe(Schedule.upTo(source.unavailableAfter)),
        while: (error) => error.reason === "Unavailable"
      })
    )
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
    const pull = (): Effect.Effect<Chunk.Chunk<Entry>, EventLogError> =>
      Effect.suspend(() => {
        const woken = watcher.next()
        return Effect.flatMap(read, (entries) => {
          if (entries.length === 0) return Effect.zipRight(idle(woken), pull())
          cursor = entries[entries.length - 1]!.seq
          return Effect.succeed(Chunk.unsafeFromArray(entries))
        })
      })
    return Stream.repeatEffectChunk(pull())
  }))

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
  runFork(Effect.logError("An event of a task is not JSON data and was not written to the event log").pipe(
    Effect.annotateLogs({ taskId, seq })
  ))
  return undefined
}

/** An entry from its stored JSON text; text that is not JSON fails with `Decode`. @internal */
export const decode = (seq: number, text: string): Effect.Effect<Entry, EventLogError> =>
  Effect.try({
    try: () => ({ seq, event: JSON.parse(text) as unknown }),
    catch: () => new EventLogError({ reason: "Decode", message: `Entry ${seq} of the event log is not JSON` })
  })

/** Logs an append whose seq another writer took. @internal */
export const conflict = (taskId: string, seq: number) =>
  Effect.logError("An event was not written to the event log: its seq is already taken (another writer of the task?)")
    .pipe(Effect.annotateLogs({ taskId, seq }))

/**
 * The log of one process. Entries are written as `append` is called, and
 * followers woken at once. Bounded: at most `maxEntries` per task (the
 * oldest dropped), and a finished task's entries go `retention` after.
 *
 * @internal
 */
export const makeMemory = (options: MemoryOptions = {}): Effect.Effect<EventLog, never, Scope.Scope> =>
  Effect.gen(function*() {
    const retention = Duration.decode(options.retention ?? defaultRetention)
    const retentionMillis = Duration.toMillis(retention)
    const maxEntries = Math.max(1, options.maxEntries ?? 10_000)
    const tasks = new Map<
      string,
      { readonly entries: Array<{ readonly seq: number; readonly text: string }>; last: number; finishedAt?: number }
    >()
    const wakeups = makeWakeups()
    const nudged = makeWakeups()
    const clock = yield* Effect.clock
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())

    const read = (taskId: string, after: number, limit: number) =>
      Effect.suspend(() => {
        const entries = tasks.get(taskId)?.entries ?? []
        // Entries are in seq order: the first after the cursor by binary search.
        let low = 0
        let high = entries.length
        while (low < high) {
          const middle = (low + high) >>> 1
          if (entries[middle]!.seq <= after) low = middle + 1
          else high = middle
        }
        return Effect.forEach(entries.slice(low, low + limit), (entry) => decode(entry.seq, entry.text))
      })

    const sweep = Effect.sync(() => {
      const now = clock.unsafeCurrentTimeMillis()
      for (const [taskId, task] of tasks) {
        if (task.finishedAt !== undefined && now - task.finishedAt >= retentionMillis) tasks.delete(taskId)
      }
    })
    yield* Effect.forkScoped(Effect.repeat(sweep, Schedule.spaced(sweepEvery(retention))))

    return {
      last: (taskId) => Effect.sync(() => tasks.get(taskId)?.last ?? 0),
      append: (taskId, seq, event) => {
        const text = encode(runFork, taskId, seq, event)
        if (text === undefined) return
        let task = tasks.get(taskId)
        if (task === undefined) {
          task = { entries: [], last: 0 }
          tasks.set(taskId, task)
        }
        if (seq <= task.last) {
          runFork(conflict(taskId, seq))
          return
        }
        task.entries.push({ seq, text })
        task.last = seq
        if (task.entries.length > maxEntries) task.entries.shift()
        wakeups.signal(taskId)
      },
      flush: Effect.void,
      follow: follow({
        read,
        wakeups,
        unavailableAfter: Duration.decode(options.unavailableAfter ?? defaultUnavailableAfter),
        unreachableSince: () => undefined
      }),
      read: (taskId, after) => read(taskId, after, Number.MAX_SAFE_INTEGER),
      finish: (taskId) => {
        const task = tasks.get(taskId)
        if (task !== undefined) task.finishedAt = clock.unsafeCurrentTimeMillis()
      },
      nudge: (taskId) => Effect.sync(() => nudged.signal(taskId)),
      nudges: nudged.watch
    }
  })
