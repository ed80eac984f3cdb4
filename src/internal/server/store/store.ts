/**
 * The task store of the server's own request handler: it appends a task's
 * events and folds them into the task (see `wire/taskFold.ts`), so that an
 * event costs what it adds. Tasks are scoped by tenant and owner as the
 * call's context gives them, as the SDK's stores scope them.
 *
 * A store of the SDK's shape (`load`, `save`, `list`: a user's own, given as
 * `A2AServer`'s `taskStore`) serves it through {@link fromSdk}, which
 * rewrites the whole task at each append: the only way that shape allows.
 * The other way, {@link toSdk} is a native store seen in the SDK's shape,
 * for what still reads that shape (the server's public `taskStore`).
 *
 * @internal
 */
import type { ListTasksRequest, ListTasksResponse, Task } from "@a2a-js/sdk"
import { A2AError } from "@a2a-js/sdk/errors"
import type { ServerCallContext, TaskStore as SdkTaskStore } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import { TaskStoreError } from "../../serverErrors.js"
import * as taskFold from "../../wire/taskFold.js"

/** @internal */
export interface TaskStore {
  /** The task as its events fold it; undefined when the call's scope holds none by that id. */
  readonly get: (taskId: string, context: ServerCallContext) => Effect.Effect<Task | undefined, TaskStoreError>
  readonly list: (
    request: ListTasksRequest,
    context: ServerCallContext
  ) => Effect.Effect<ListTasksResponse, TaskStoreError>
  /**
   * Appends `events` to the task `taskId`, in order, each folded into it;
   * the first event of a task the store does not hold must be its `task`
   * event. The task as they leave it; undefined when they start none. The
   * store keeps its own copy: the events may be held elsewhere meanwhile.
   */
  readonly append: (
    taskId: string,
    events: ReadonlyArray<taskFold.TaskEvent>,
    context: ServerCallContext
  ) => Effect.Effect<Task | undefined, TaskStoreError>
}

/**
 * The cancels appended to a store that others write too (another server of
 * this process on the same SQLite file, any server on the same PostgreSQL),
 * as they commit: what lets the server running a task stop it when its
 * cancel reached another server. A notice is only a reason to read the
 * task: on PostgreSQL any role that can connect may notify.
 *
 * @internal
 */
export interface CancelFeed {
  /** Tells `follower` of each cancel until the function it returns is called. */
  readonly follow: (follower: CancelFollower) => () => void
  /** The name a notice gives the task `taskId` of the call's scope. */
  readonly keyOf: (taskId: string, context: ServerCallContext) => string
}

/** @internal */
export interface CancelFollower {
  /** A cancel of the task named `key` was appended (maybe: read the task to know). */
  readonly canceled: (key: string) => void
  /** Notices may have been lost (the feed's connection was lost and is back): read every task followed. */
  readonly missed: () => void
}

/** @internal */
export const TaskStore: Context.Tag<TaskStore, TaskStore> = Context.GenericTag<TaskStore>("effect-a2a/TaskStore")

// The store's own error is kept as the cause: what the server logs whole, under an error id.
const failed = (what: string) => (error: unknown) =>
  Object.assign(
    new TaskStoreError({
      reason: "Driver",
      message: `${what}: ${error instanceof Error ? error.message : String(error)}`
    }),
    { cause: error }
  )

/**
 * A call of a store of the SDK's shape. What it rejects with an A2A error is
 * the caller's mistake (a page token that does not decode): it goes on as it
 * is, a defect the transports answer by its class (-32602), not a failure of
 * the store.
 */
const attempt = <A>(what: string, call: () => Promise<A>): Effect.Effect<A, TaskStoreError> =>
  Effect.catchAll(
    Effect.tryPromise({ try: call, catch: (error) => error }),
    (error) => error instanceof A2AError ? Effect.die(error) : Effect.fail(failed(what)(error))
  )

/**
 * A store of the SDK's shape as a {@link TaskStore}: each append loads the
 * task, folds the events in and saves it whole.
 *
 * @internal
 */
export const fromSdk = (store: SdkTaskStore): TaskStore => ({
  get: (taskId, context) => attempt(`Loading task ${taskId}`, () => store.load(taskId, context)),
  list: (request, context) => attempt("Listing tasks", () => store.list(request, context)),
  append: (taskId, events, context) =>
    attempt(`Saving task ${taskId}`, async () => {
      const task = taskFold.fold(await store.load(taskId, context), events)
      if (task !== undefined) await store.save(task, context)
      return task
    })
})

/**
 * `store` in the SDK's shape: `load` is `get`, `list` is `list`, and `save`
 * appends the whole task as one `task` event, which the fold takes as a run
 * starting from it: its status, context and metadata replace the stored
 * ones, its artifacts are merged in by id, and its history replaces the
 * stored one unless empty. The task is copied first, as the SDK's stores
 * copy it. A failure of the store rejects with its own
 * error (a `TaskStoreError`, or the A2A error of a page token that does
 * not decode).
 *
 * @internal
 */
export const toSdk = (store: TaskStore, runtime: Runtime.Runtime<never>): SdkTaskStore => {
  const run = async <A>(effect: Effect.Effect<A, TaskStoreError>): Promise<A> => {
    const exit = await Runtime.runPromiseExit(runtime)(effect)
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  }
  return {
    load: (taskId, context) => run(store.get(taskId, context)),
    list: (request, context) => run(store.list(request, context)),
    save: async (task, context) => {
      // A copy, as the SDK's stores save: the caller may change its task after the save returns.
      await run(store.append(task.id, [{ kind: "task", data: structuredClone(task) }], context))
    }
  }
}
