/**
 * The event log of one process, on the same followers as PostgreSQL's
 * (see `eventLog.ts`): what the log's tests run both logs' cases on.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import {
  conflict,
  decodeRows,
  defaultRetention,
  defaultUnavailableAfter,
  encode,
  type EventLog,
  firstAfter,
  makeTails,
  makeWakeups,
  type MemoryOptions,
  type Row,
  sweepEvery
} from "./eventLog.js"

/**
 * The log of one process. Entries are written as `append` is called, and
 * followers woken at once. Bounded: at most `maxEntries` per task (the
 * oldest dropped), and a finished task's entries go `retention` after.
 *
 * @internal
 */
export const make = (options: MemoryOptions = {}): Effect.Effect<EventLog, never, Scope.Scope> =>
  Effect.gen(function*() {
    const retention = Duration.decode(options.retention ?? defaultRetention)
    const retentionMillis = Duration.toMillis(retention)
    const maxEntries = Math.max(1, options.maxEntries ?? 10_000)
    const tasks = new Map<
      string,
      { readonly rows: Array<Row>; last: number; finishedAt?: number }
    >()
    const wakeups = makeWakeups()
    const nudged = makeWakeups()
    const clock = yield* Effect.clock
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())

    const read = (taskId: string, after: number, limit: number) =>
      Effect.sync(() => {
        const rows = tasks.get(taskId)?.rows ?? []
        const from = firstAfter(rows, after)
        return rows.slice(from, from + limit)
      })
    const tails = yield* makeTails({
      read,
      wakeups,
      unavailableAfter: Duration.decode(options.unavailableAfter ?? defaultUnavailableAfter),
      unreachableSince: () => undefined
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
          task = { rows: [], last: 0 }
          tasks.set(taskId, task)
        }
        if (seq <= task.last) {
          runFork(conflict(taskId, seq))
          return
        }
        const row = { seq, text }
        task.rows.push(row)
        task.last = seq
        if (task.rows.length > maxEntries) task.rows.shift()
        if (!tails.offer(taskId, row)) wakeups.signal(taskId)
      },
      flush: Effect.void,
      follow: tails.follow,
      iterate: tails.iterate,
      read: (taskId, after) => Effect.flatMap(read(taskId, after, Number.MAX_SAFE_INTEGER), decodeRows),
      finish: (taskId) => {
        const task = tasks.get(taskId)
        if (task !== undefined) task.finishedAt = clock.unsafeCurrentTimeMillis()
      },
      nudge: (taskId) => Effect.sync(() => nudged.signal(taskId)),
      nudges: nudged.watch
    }
  })
