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
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { storedTextProblem } from "../../ledger/storedText.js"
import * as internalTaskStore from "../store/taskStore.js"
import * as internalPushTarget from "./pushTarget.js"

// The SDK's `config_id` column is a `varchar(36)`: a longer id, or one PostgreSQL cannot store as given, would
// fail in the database as an internal error rather than as the caller's mistake.
const configIdLimit = 36

const unstorableId = (id: string): string | undefined => {
  const problem = storedTextProblem(id)
  if (problem !== undefined) return `push config id ${problem}`
  return [...id].length > configIdLimit
    ? `push config id must be at most ${configIdLimit} characters for this server's push-config store`
    : undefined
}

/**
 * `store` with the target of every config checked before it is saved. The
 * SDK saves through the store both the create call's config and
 * `SendMessage`'s `configuration.taskPushNotificationConfig`, so this one
 * place covers both; a refusal is the SDK's `RequestMalformedError`
 * (-32602 on JSON-RPC, 400 on HTTP+JSON, INVALID_ARGUMENT on gRPC).
 */
const guarded = (
  store: PushNotificationStore,
  policy: internalPushTarget.PushPolicy,
  isDatabase: boolean
): PushNotificationStore => {
  const loadWithMetadata = store.loadWithMetadata
  return {
    save: async (taskId, context, config) => {
      const problem = (isDatabase ? unstorableId(config.id) : undefined) ??
        await internalPushTarget.targetProblem(config.url, policy)
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
  taskStore !== "memory" && internalTaskStore.isDatabase(taskStore)
    ? Effect.map(
      internalTaskStore.open(taskStore, internalTaskStore.pushConfigs),
      ({ db, sdk }) => guarded(new sdk.DatabasePushNotificationStore(db), policy, true)
    )
    : Effect.sync(() => guarded(new InMemoryPushNotificationStore(), policy, false))
