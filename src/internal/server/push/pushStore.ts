/**
 * The store of push-notification configs, beside the task store: one in
 * memory for the in-memory task stores (and a user's own `TaskStore`), kept
 * as the SDK's `InMemoryPushNotificationStore` keeps them, the SDK's
 * `DatabasePushNotificationStore` on the
 * same SQLite file or PostgreSQL database as a database task store, its
 * table created by the SDK's own migration (`a2a-db upgrade --store
 * push-notification-configs`).
 *
 * Both keep the SDK's scoping by tenant and `resolveUserScope(context)`: a
 * caller loads only the configs it saved.
 *
 * @internal
 */
import type { TaskPushNotificationConfig } from "@a2a-js/sdk"
import { RequestMalformedError } from "@a2a-js/sdk/errors"
import {
  type PushNotificationStore,
  resolveUserScope,
  type ServerCallContext,
  type StoredPushNotificationConfig
} from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
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
 * The push-config store, and what the server asks of it beyond the SDK's
 * interface.
 *
 * @internal
 */
export interface PushStore extends PushNotificationStore {
  /**
   * False when no caller keeps a config of `taskId`: the events of its runs
   * then cost the sender nothing. Always true for a database store, which
   * other servers (replicas, or processes on the same SQLite file) save to
   * unseen by this one.
   */
  readonly mayHaveConfigs: (taskId: string) => boolean
  /**
   * Drops at once the configs of `taskId` that the caller `owner` of
   * `tenant` saved: for a task the bounded memory store forgets. None for a
   * database store, whose retention deletes the configs with their tasks.
   */
  readonly forgetTask: ((taskId: string, tenant: string, owner: string) => void) | undefined
}

// The wire version of a config saved without one, as the SDK's stores give it (its constant is not exported).
const legacyVersion = "0.3"

/**
 * Configs in memory, kept as the SDK's `InMemoryPushNotificationStore` keeps
 * them (tenant, then owner, then task; copies in and out; the wire version
 * each was saved over; a save under an existing id replacing it), with a
 * count per task id of the callers keeping any: every event of every run
 * asks it, and almost every task has none.
 */
const memoryStore = (): PushStore => {
  const tenants = new Map<string, Map<string, Map<string, Array<StoredPushNotificationConfig>>>>()
  const callers = new Map<string, number>()
  const entriesOf = (taskId: string, context: ServerCallContext) =>
    tenants.get(context.tenant ?? "")?.get(resolveUserScope(context))?.get(taskId)
  // The last config of a task of one caller went: so do the empty maps, or every caller who came once would stay.
  const drop = (taskId: string, tenant: string, owner: string): void => {
    const owners = tenants.get(tenant)
    const tasks = owners?.get(owner)
    if (owners === undefined || tasks === undefined || !tasks.delete(taskId)) return
    const left = (callers.get(taskId) ?? 1) - 1
    if (left > 0) callers.set(taskId, left)
    else callers.delete(taskId)
    if (tasks.size > 0) return
    owners.delete(owner)
    if (owners.size === 0) tenants.delete(tenant)
  }
  return {
    mayHaveConfigs: (taskId) => callers.has(taskId),
    forgetTask: drop,
    save: async (taskId, context, config: TaskPushNotificationConfig) => {
      const tenant = context.tenant ?? ""
      const owner = resolveUserScope(context)
      let owners = tenants.get(tenant)
      if (owners === undefined) {
        owners = new Map()
        tenants.set(tenant, owners)
      }
      let tasks = owners.get(owner)
      if (tasks === undefined) {
        tasks = new Map()
        owners.set(owner, tasks)
      }
      // The SDK's contract: an empty id is given one, in the caller's own object.
      if (!config.id) config.id = randomUUID()
      let entries = tasks.get(taskId)
      if (entries === undefined) {
        entries = []
        tasks.set(taskId, entries)
        callers.set(taskId, (callers.get(taskId) ?? 0) + 1)
      } else {
        const existing = entries.findIndex((entry) => entry.config.id === config.id)
        if (existing >= 0) entries.splice(existing, 1)
      }
      entries.push({ config: structuredClone(config), wireVersion: context.requestedVersion || legacyVersion })
    },
    load: async (taskId, context) => entriesOf(taskId, context)?.map((entry) => structuredClone(entry.config)) ?? [],
    loadWithMetadata: async (taskId, context) =>
      entriesOf(taskId, context)?.map((entry) => structuredClone(entry)) ?? [],
    // As the SDK's: without a config id, the one named as the task.
    delete: async (taskId, context, configId = taskId) => {
      const entries = entriesOf(taskId, context)
      if (entries === undefined) return
      const index = entries.findIndex((entry) => entry.config.id === configId)
      if (index >= 0) entries.splice(index, 1)
      if (entries.length === 0) drop(taskId, context.tenant ?? "", resolveUserScope(context))
    }
  }
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
  isDatabase: boolean,
  { forgetTask, mayHaveConfigs }: Pick<PushStore, "mayHaveConfigs" | "forgetTask">
): PushStore => {
  const loadWithMetadata = store.loadWithMetadata
  return {
    mayHaveConfigs,
    forgetTask,
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
): Effect.Effect<PushStore, internalTaskStore.Failure, Scope.Scope> =>
  taskStore !== "memory" && internalTaskStore.isDatabase(taskStore)
    ? Effect.map(
      internalTaskStore.open(taskStore, internalTaskStore.pushConfigs),
      ({ db, sdk }) =>
        guarded(new sdk.DatabasePushNotificationStore(db), policy, true, {
          mayHaveConfigs: () => true,
          forgetTask: undefined
        })
    )
    : Effect.sync(() => {
      const store = memoryStore()
      return guarded(store, policy, false, store)
    })
