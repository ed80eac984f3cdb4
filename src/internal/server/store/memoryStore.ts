/**
 * The native in-memory {@link TaskStore}, bounded as the SDK-shaped memory
 * store is (see `shelf.ts`): an append folds its events into the store's
 * own task, in place, so that an event costs what it adds; `get` and `list`
 * hand out copies (`taskFold.copy`), which a reader may change.
 *
 * @internal
 */
import type { Task } from "@a2a-js/sdk"
import type { ServerCallContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import * as taskFold from "../../wire/taskFold.js"
import { scopeOf } from "../caller/authentication.js"
import * as shelf from "./shelf.js"
import type { TaskStore } from "./store.js"
import * as taskList from "./taskList.js"

/** @internal */
export interface Options extends shelf.Bounds {
  /** The time in milliseconds; tests move it by hand. */
  readonly now: () => number
}

/**
 * A native store with what the server wires beside it: the push configs of
 * the tasks it forgets are deleted through `whenForgotten`, and a load that
 * finds nothing asks `heldElsewhere` whether another caller holds the id.
 *
 * @internal
 */
export interface MemoryStore extends TaskStore {
  readonly whenForgotten: (listener: shelf.Forgotten) => void
  readonly heldElsewhere: (taskId: string, context: ServerCallContext) => Effect.Effect<boolean>
}

/** @internal */
export const make = (options: Options): MemoryStore => {
  const { now } = options
  const kept = shelf.make(options)
  const current = () => {
    const at = now()
    kept.expire(at)
    return at
  }
  return {
    get: (taskId, context) =>
      Effect.sync(() => {
        current()
        const { owner, tenant } = scopeOf(context)
        const entry = kept.get(tenant, owner, taskId)
        return entry === undefined ? undefined : taskList.handOut(entry.task)
      }),
    list: (request, context) =>
      Effect.sync(() => {
        current()
        const { owner, tenant } = scopeOf(context)
        return taskList.page(kept.tasksOf(tenant, owner), request)
      }),
    append: (taskId, events, context) =>
      Effect.sync(() => {
        const at = current()
        const { owner, tenant } = scopeOf(context)
        const entry = kept.get(tenant, owner, taskId)
        if (entry === undefined) {
          // The fold starts from the first event's own copy: what the store keeps is its own.
          const task: Task | undefined = taskFold.fold(undefined, events)
          if (task === undefined || task.id !== taskId) return undefined
          kept.put(tenant, owner, task, at)
          return taskList.handOut(task)
        }
        for (const event of events) taskFold.apply(entry.task, event)
        kept.touch(entry, at)
        return taskList.handOut(entry.task)
      }),
    whenForgotten: kept.whenForgotten,
    heldElsewhere: (taskId, context) =>
      Effect.sync(() => {
        const { owner, tenant } = scopeOf(context)
        return kept.heldElsewhere(tenant, owner, taskId)
      })
  }
}
