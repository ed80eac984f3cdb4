/**
 * The watch for a cancel that reached another server sharing the task
 * store: the store's cancel feed tells it, and it stops the run here as a
 * local cancel would. Without it the agent would go on to its end, side
 * effects included, and its end be dropped (the task is CANCELED already).
 *
 * Only a store others write has a feed (`store/sqlCancels.ts`): PostgreSQL
 * tells every server on the database, SQLite the servers of this process
 * on the file. A memory store sees every cancel through this server, which
 * stops the run itself. A store of the SDK's shape (a user's own) can tell
 * nothing: without `replication`, whose nudge stops the run, a cancel that
 * reaches another server than the run's does not stop it.
 *
 * @internal
 */
import { TaskState } from "@a2a-js/sdk"
import type { RequestContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { CancelFeed, TaskStore } from "../store/store.js"

/** Forks an effect on the executor's runtime. */
export type RunFork = <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>

/**
 * The executor option (a symbol: no public option can collide with it) of
 * the feed it follows for cancels, and the store it reads a task from when
 * told: the server's own request handler writes the store, the executor
 * only reads it.
 */
export const cancelWatchOption: unique symbol = Symbol.for("effect-a2a/AgentExecutor/cancelWatch")
export interface CancelWatchOptions {
  readonly [cancelWatchOption]?: { readonly feed: CancelFeed; readonly store: TaskStore } | undefined
}

/** A run, as the watch for a cancel from another server sees it. */
export interface WatchedRun {
  readonly context: RequestContext
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown>
  canceled: boolean
}

interface Watch {
  readonly key: string
  reading: boolean
  /** Told again while a read was in flight: read once more after it. */
  again: boolean
  warned: boolean
}

/** The watch for cancels from other servers, over every run of an executor. */
export interface CancelWatch {
  /** Watches `run` until {@link CancelWatch.unwatch}. */
  readonly watch: (run: WatchedRun) => void
  /** Stops watching `run`. */
  readonly unwatch: (run: WatchedRun) => void
}

// The cancels told lately, for a run that starts after its task's cancel was told (a paused task continued here
// while another server canceled it): a canceled task never runs again, so keeping one too long costs only a read.
const recentMillis = 60_000
const recentKept = 1_000

// A read that fails is tried again while its run goes on: no later notice may come.
const readRetry = Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("2 seconds")))

/**
 * Follows `feed` for the scope. A notice is only a reason to read the task
 * (anyone who can connect to PostgreSQL may notify): the run stops when the
 * store says CANCELED. A run whose read is in flight is read once more
 * after it when told again meanwhile, and never twice at once.
 */
export const cancelWatch = (
  feed: CancelFeed,
  store: TaskStore,
  runFork: RunFork
): Effect.Effect<CancelWatch, never, Scope.Scope> =>
  Effect.gen(function*() {
    const watched = new Map<WatchedRun, Watch>()
    const byKey = new Map<string, Set<WatchedRun>>()
    const recent = new Map<string, number>()
    const check = (run: WatchedRun, state: Watch) => {
      if (state.reading) {
        state.again = true
        return
      }
      state.reading = true
      const { context, taskId } = run.context
      const read = store.get(taskId, context).pipe(
        Effect.tapError(() =>
          state.warned ? Effect.void : Effect.suspend(() => {
            state.warned = true
            return Effect.logWarning("Could not read the task's state to see whether it was canceled; trying again")
          })
        ),
        Effect.retry({ schedule: readRetry, while: () => watched.get(run) === state }),
        Effect.annotateLogs({ taskId, contextId: run.context.contextId })
      )
      runFork(read).addObserver((exit) => {
        state.reading = false
        if (watched.get(run) !== state) return
        if (Exit.isSuccess(exit) && exit.value?.status?.state === TaskState.TASK_STATE_CANCELED) {
          run.canceled = true
          run.fiber.unsafeInterruptAsFork(FiberId.none)
        } else if (state.again) {
          state.again = false
          check(run, state)
        }
      })
    }
    const unfollow = feed.follow({
      canceled: (key) => {
        recent.delete(key)
        recent.set(key, performance.now())
        // The oldest first: Map iterates in insertion order.
        const oldest = recent.keys().next()
        if (recent.size > recentKept && oldest.done !== true) recent.delete(oldest.value)
        byKey.get(key)?.forEach((run) => {
          const state = watched.get(run)
          if (state !== undefined) check(run, state)
        })
      },
      missed: () => watched.forEach((state, run) => check(run, state))
    })
    yield* Effect.addFinalizer(() => Effect.sync(unfollow))
    return {
      watch: (run) => {
        const key = feed.keyOf(run.context.taskId, run.context.context)
        const state: Watch = { key, reading: false, again: false, warned: false }
        watched.set(run, state)
        const runs = byKey.get(key) ?? new Set()
        runs.add(run)
        byKey.set(key, runs)
        const told = recent.get(key)
        if (told !== undefined && performance.now() - told < recentMillis) check(run, state)
      },
      unwatch: (run) => {
        const state = watched.get(run)
        if (state === undefined) return
        watched.delete(run)
        const runs = byKey.get(state.key)
        runs?.delete(run)
        if (runs?.size === 0) byKey.delete(state.key)
      }
    }
  })
