/**
 * Wakes waiters in this process when an entry changes; other replicas are
 * covered by polling.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import { idString, type RowId } from "./store.js"

export interface Notifier {
  /** Subscribes before `use` reads the store, so no change between the read and the wait is missed. */
  readonly watch: <A, E, R>(
    id: RowId,
    use: (changed: Effect.Effect<void>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  readonly signal: (id: RowId) => Effect.Effect<void>
}

export const make = (): Notifier => {
  const watchers = new Map<string, { readonly changed: Deferred.Deferred<void>; count: number }>()
  return {
    watch: (id, use) => {
      const name = idString(id)
      return Effect.acquireUseRelease(
        Effect.sync(() => {
          let watcher = watchers.get(name)
          if (watcher === undefined) {
            watcher = { changed: Deferred.unsafeMake<void>(FiberId.none), count: 0 }
            watchers.set(name, watcher)
          }
          watcher.count++
          return watcher
        }),
        (watcher) => use(Deferred.await(watcher.changed)),
        (watcher) =>
          Effect.sync(() => {
            watcher.count--
            if (watcher.count === 0 && watchers.get(name) === watcher) watchers.delete(name)
          })
      )
    },
    signal: (id) =>
      Effect.sync(() => {
        const name = idString(id)
        const watcher = watchers.get(name)
        if (watcher !== undefined) {
          watchers.delete(name)
          Deferred.unsafeDone(watcher.changed, Exit.void)
        }
      })
  }
}
