/**
 * The native {@link TaskStore} a server's `TaskStoreConfig` names, for the
 * server's own request handler.
 *
 * - `Memory`: the bounded store (`memoryStore.ts`), on the Effect clock.
 * - `Unbounded`: the same store with no bounds.
 * - `Sqlite`, `Postgres`: `sqlStore.ts`, on the SDK's `tasks` table (which
 *   today's stores wrote, read as it is) and our events table beside it.
 *
 * Wiring it (`edge/app.ts`): provide `TaskStore` from `make(config, {
 * withPushConfigs })` in the server's scope; when the store has
 * `whenForgotten` (a memory one), it tells the push store of each task it
 * forgets, whose configs then go.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { TaskStoreError } from "../../serverErrors.js"
import * as memoryStore from "./memoryStore.js"
import * as sqlStore from "./sqlStore.js"
import { TaskStore } from "./store.js"
import type * as internalTaskStore from "./taskStore.js"

/** A native store, with what the server wires beside it. @internal */
export type NativeStore = memoryStore.MemoryStore | sqlStore.SqlStore

/** @internal */
export interface Options {
  /** Whether push is on: a database store's retention then deletes the push configs of the tasks it deletes. */
  readonly withPushConfigs?: boolean | undefined
}

/** The native store `config` names; a database one closes its connection with the scope. @internal */
export const make = (
  config: internalTaskStore.Config,
  options: Options = {}
): Effect.Effect<NativeStore, TaskStoreError, Scope.Scope> =>
  config._tag === "Memory"
    ? Effect.map(Effect.clock, (clock) => memoryStore.make({ ...config, now: () => clock.unsafeCurrentTimeMillis() }))
    : config._tag === "Unbounded"
    ? Effect.map(Effect.clock, (clock) =>
      memoryStore.make({
        retention: Duration.infinity,
        interruptedRetention: Duration.infinity,
        maxFinished: Infinity,
        now: () => clock.unsafeCurrentTimeMillis()
      }))
    : sqlStore.make(config, options)

/** {@link make} as the `TaskStore` service. @internal */
export const layer = (
  config: internalTaskStore.Config,
  options: Options = {}
): Layer.Layer<TaskStore, TaskStoreError> => Layer.scoped(TaskStore, make(config, options))
