/**
 * Who starts a durable run again once its process died: a single server
 * at its next start, every run its store still holds; on replicas, the
 * replica whose sweep finds the run's claim lapsed (see
 * `replication/runClaims.ts`), which takes the claim first, so that one
 * replica alone resumes it.
 *
 * What is resumed is a run whose task is still SUBMITTED or WORKING. A run
 * whose task ended, or paused without a question (a crash between its end
 * and its row's delete), is deleted; one that waits on its question waits
 * for its answer, unless its task is canceled ({@link endingPaused}).
 *
 * @internal
 */
import { type Task, TaskState } from "@a2a-js/sdk"
import type { ServerCallContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as taskState from "../../wire/taskState.js"
import * as internalAuthentication from "../caller/authentication.js"
import { decodeOrigin } from "../durable/durableRun.js"
import type { DurableRuns, RunRow } from "../durable/durableRuns.js"
import type { RequestHandler } from "../handler/requestHandler.js"
import type { Resuming } from "../handler/send.js"
import type * as internalRunClaims from "../replication/runClaims.js"
import type { TaskStore } from "../store/store.js"

/** The task of `row` when its run is to be started again; the row deleted when it is over. */
const toResume = (runs: DurableRuns, store: TaskStore, row: RunRow) =>
  Effect.gen(function*() {
    const context = internalAuthentication.ownerContext(row.tenant, row.owner)
    const task = yield* store.get(row.taskId, context)
    const state = task?.status?.state
    if (task !== undefined && !taskState.isSettled(state)) return { task, context }
    if (task === undefined || !taskState.isPaused(state) || row.asking === undefined) yield* runs.end(row)
    return undefined
  })

const resume = (resuming: Resuming, row: RunRow, task: Task, context: ServerCallContext, done: () => void) =>
  resuming.resume(task, decodeOrigin(row.request).request, context, done)

const logged = (what: string, taskId: string | undefined) => (error: unknown) =>
  Effect.logWarning(what).pipe(
    Effect.annotateLogs({ ...(taskId === undefined ? {} : { taskId }), cause: String(error) })
  )

/** A single server's start: every durable run of its store that did not end is started again. @internal */
export const atStart = (runs: DurableRuns, store: TaskStore, resuming: Resuming): Effect.Effect<void> =>
  Effect.flatMap(
    Effect.catchAll(runs.all, (error) =>
      Effect.as(logged("Could not read the durable runs to resume", undefined)(error), [] as ReadonlyArray<RunRow>)),
    (rows) =>
      Effect.forEach(rows, (row) =>
        toResume(runs, store, row).pipe(
          Effect.tap((found) =>
            found === undefined
              ? Effect.void
              : Effect.sync(() =>
                resume(resuming, row, found.task, found.context, () => {})
              )
          ),
          Effect.catchAll(logged("Could not resume a durable run", row.taskId))
        ), { discard: true })
  )

/**
 * What a replica does with a lapsed claim of a durable run: takes the claim
 * and starts the run again here, holding the claim until it ends. False
 * when the task's run is not durable (today's FAILED then).
 *
 * @internal
 */
export const onLapsed = (
  runs: DurableRuns,
  store: TaskStore,
  claims: internalRunClaims.RunClaims,
  resuming: () => Resuming | undefined
) =>
(lapsed: internalRunClaims.Lapsed): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const key = { tenant: lapsed.tenant, owner: lapsed.owner, taskId: lapsed.taskId }
    const loaded = yield* runs.load(key)
    if (loaded._tag === "None") return false
    if (!(yield* claims.acquire(lapsed.taskId, lapsed))) return true
    const handler = resuming()
    // This server stops: the claim lapses again, for another replica (or this one's next start) to take.
    if (handler === undefined) {
      yield* claims.lapse(lapsed.taskId)
      return true
    }
    const found = yield* Effect.onError(toResume(runs, store, loaded.value.row), () => claims.release(lapsed.taskId))
    if (found === undefined) {
      yield* claims.release(lapsed.taskId)
      return true
    }
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const release = claims.release(lapsed.taskId)
    yield* Effect.sync(() => resume(handler, loaded.value.row, found.task, found.context, () => void runFork(release)))
    return true
  }).pipe(
    Effect.catchAll((error) => Effect.as(logged("Could not resume a durable run", lapsed.taskId)(error), true))
  )

/**
 * `handler`, whose cancels end the durable run of a task that waits on its
 * question: no run is in progress to end it (a run in progress ends its own
 * as it stops), and no answer can come to a canceled task.
 *
 * @internal
 */
export const endingPaused = (handler: RequestHandler, runs: DurableRuns): RequestHandler => ({
  ...handler,
  cancelTask: (params, context) =>
    Effect.tap(handler.cancelTask(params, context), (task) => {
      if (task.status?.state !== TaskState.TASK_STATE_CANCELED) return Effect.void
      const key = { ...internalAuthentication.scopeOf(context), taskId: task.id }
      return runs.load(key).pipe(
        Effect.flatMap((loaded) =>
          loaded._tag === "Some" && loaded.value.row.asking !== undefined ? runs.end(key) : Effect.void
        ),
        Effect.catchAll(logged("Could not delete the durable run of a canceled task", task.id))
      )
    })
})
