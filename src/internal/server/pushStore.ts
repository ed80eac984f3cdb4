/**
 * The store of push-notification configs, beside the task store: the SDK's
 * `InMemoryPushNotificationStore` for the in-memory task stores (and a
 * user's own `TaskStore`), the SDK's `DatabasePushNotificationStore` on the
 * same SQLite file or PostgreSQL database as a database task store, its
 * table created by the SDK's own migration (`a2a-db upgrade --store
 * push-notification-configs`).
 *
 * Both keep the SDK's scoping by tenant and `resolveUserScope(context)`: a
 * caller loads only the configs it saved.
 *
 * @internal
 */
import { RequestMalformedError } from "@a2a-js/sdk/errors"
import { InMemoryPushNotificationStore, type PushNotificationStore } from "@a2a-js/sdk/server"
import { Effect } from "effect"
import type * as Scope from "effect/Scope"
import * as internalPushTarget from "./pushTarget.js"
import * as internalTaskStore from "./taskStore.js"

const pushConfigs: internalTaskStore.Table = { store: "push-notification-configs", what: "push-config store" }

/**
 * `store` with the target of every config checked before it is saved. The
 * SDK saves through the store both the create call's config and
 * `SendMessage`'s `configuration.taskPushNotificationConfig`, so this one
 * place covers both; a refusal is the SDK's `RequestMalformedError`
 * (-32602 on JSON-RPC, 400 on HTTP+JSON, INVALID_ARGUMENT on gRPC).
 */
const guarded = (store: PushNotificationStore, policy: internalPushTarget.PushPolicy): PushNotificationStore => {
  const loadWithMetadata = store.loadWithMetadata
  return {
    save: async (taskId, context, config) => {
      const problem = await internalPushTarget.targetProblem(config.url, policy)
      if (problem !== undefined) throw new RequestMalformedError(problem)
      return store.save(taskId, context, config)
    },
    load: (taskId, context) => store.load(taskId, context),
    ...(loadWithMetadata === undefined ? {} : {
      loadWithMetadata: (taskId, context) => loadWithMetadata.call(store, taskId, context)
    }),
    delete: (taskId, context, configId) => store.delete(taskId, context, configId)
  }
}

/**
 * The push-config store beside the task store `taskStore` names (`"memory"`
 * for a user's own `TaskStore`), its saves guarded by `policy`. A database
 * one opens its own connection to the task store's database, closing with
 * the scope.
 *
 * @internal
 */
export const make = (
  taskStore: internalTaskStore.Config | "memory",
  policy: internalPushTarget.PushPolicy
): Effect.Effect<PushNotificationStore, internalTaskStore.Failure, Scope.Scope> =>
  Effect.map(
    taskStore !== "memory" && internalTaskStore.isDatabase(taskStore)
      ? Effect.map(internalTaskStore.open(taskStore, pushConfigs), ({ db, sdk }) =>
        new sdk.DatabasePushNotificationStore(db) as PushNotificationStore)
      : Effect.sync((): PushNotificationStore => new InMemoryPushNotificationStore()),
    (store) => guarded(store, policy)
  )
