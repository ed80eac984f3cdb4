/**
 * The watch for a cancel that reached another replica sharing the task
 * store: read from the store every second while a run waits.
 *
 * @internal
 */
import { TaskState } from "@a2a-js/sdk"
import type { RequestContext, TaskStore } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as internalFailure from "./failure.js"

/** Forks an effect on the executor's runtime. */
export type RunFork = <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>

// A custom store's call that throws instead of rejecting, as a rejection: a throw must not leave a timer.
const settled = <A>(call: () => Promise<A>): Promise<A> => {
  try {
    return call()
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * The executor option (a symbol: no public option can collide with it) of
 * the store it reads for cancels: the server's own request handler writes
 * the store, the executor only reads it. Given only for a store another
 * process may write (a database, a custom store): a store in this process's
 * memory sees every cancel through this server, which stops the run itself.
 */
export const cancelWatchStoreOption: unique symbol = Symbol.for("effect-a2a/AgentExecutor/cancelWatchStore")
export interface CancelWatchOptions {
  readonly [cancelWatchStoreOption]?: TaskStore | undefined
}

const cancelWatchMillis = 1000

/** A run, as the watch for a cancel from another replica sees it. */
export interface WatchedRun {
  readonly context: RequestContext
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown>
  canceled: boolean
}

interface Watch {
  readonly since: number
  reading: boolean
  warned: boolean
}

/** The watch for cancels from other replicas, over every run of an executor. */
export interface CancelWatch {
  /** Watches `run` until {@link CancelWatch.unwatch}: no closure per run. */
  readonly watch: (run: WatchedRun) => void
  /** Stops watching `run`. */
  readonly unwatch: (run: WatchedRun) => void
}

/**
 * A cancel that reached another replica is written straight to the store
 * (the SDK finds no run there to stop). Checked every second while the run
 * waits, it stops the run here as a local cancel would; otherwise the agent
 * would go on to its end, side effects included, and its end be dropped.
 *
 * One timer for all the runs, not one per run: a run waiting holds no timer
 * or closures of its own. A run is first read once it has waited half a
 * period, so runs shorter than that are never read, and then every period. A
 * run whose read is still pending (a slow store) is not read again until it
 * settles, and does not hold up the others.
 */
export const cancelWatch = (store: TaskStore, runFork: RunFork): CancelWatch => {
  // Per run watched: since when, whether its read is in flight, and whether a failed read was logged (once
  // per run: the watch goes on, and every second would repeat the same line).
  const watched = new Map<WatchedRun, Watch>()
  let timer: ReturnType<typeof setTimeout> | undefined
  const failed = (run: WatchedRun, state: { warned: boolean }) => (error: unknown) => {
    if (state.warned) return
    state.warned = true
    runFork(
      Effect.logWarning("Could not read the task's state to see whether it was canceled; still checking").pipe(
        Effect.annotateLogs({
          taskId: run.context.taskId,
          contextId: run.context.contextId,
          cause: internalFailure.renderCause(Cause.die(error))
        })
      )
    )
  }
  const check = (run: WatchedRun, state: Watch) => {
    state.reading = true
    // `settled`: a store that throws instead of rejecting must not throw out of a timer.
    settled(() => store.load(run.context.taskId, run.context.context)).then((task) => {
      if (!watched.has(run) || task?.status?.state !== TaskState.TASK_STATE_CANCELED) return
      run.canceled = true
      run.fiber.unsafeInterruptAsFork(FiberId.none)
    }, failed(run, state)).finally(() => {
      state.reading = false
    })
  }
  const sweep = () => {
    timer = undefined
    const due = performance.now() - cancelWatchMillis / 2
    for (const [run, state] of watched) if (!state.reading && state.since <= due) check(run, state)
    schedule()
  }
  // Unref'd: the runs, not their watch, are what keep the process up.
  const schedule = () => {
    if (timer === undefined && watched.size > 0) timer = setTimeout(sweep, cancelWatchMillis).unref()
  }
  return {
    watch: (run) => {
      watched.set(run, { since: performance.now(), reading: false, warned: false })
      schedule()
    },
    unwatch: (run) => {
      watched.delete(run)
      if (watched.size === 0 && timer !== undefined) {
        clearTimeout(timer)
        timer = undefined
      }
    }
  }
}
