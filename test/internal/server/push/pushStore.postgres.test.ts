/**
 * The push-config store on PostgreSQL: the SDK's `DatabasePushNotificationStore`
 * on the database of a `Postgres` task store, its table migrated at start-up,
 * held to the same contract as the memory and SQLite stores.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as internalPushStore from "../../../../src/internal/server/push/pushStore.js"
import type * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { callerA, configOf, policy, pushStoreContract } from "../../../fixtures/pushStores.js"

/** PostgreSQL from the global setup, or DATABASE_URL; the tests fail without it. */
const postgres = (): internalTaskStore.Config => ({ _tag: "Postgres", url: databaseUrl(), poolSize: 2 })

pushStoreContract("PostgreSQL", () => internalPushStore.make(postgres(), policy), { database: true })

describe("PostgreSQL", () => {
  it.scoped("two stores starting together migrate once and share their configs", () =>
    Effect.gen(function*() {
      const taskId = randomUUID()
      const first = yield* Scope.make()
      const [a, b] = yield* Effect.all([
        internalPushStore.make(postgres(), policy),
        internalPushStore.make(postgres(), policy)
      ], { concurrency: 2 }).pipe(Scope.extend(first))
      const config = configOf("http://127.0.0.2:9/hook", "shared", taskId)
      yield* Effect.promise(() => a.save(taskId, callerA, config))
      expect(yield* Effect.promise(() => b.load(taskId, callerA))).toEqual([config])
      yield* Scope.close(first, Exit.void)
      const reopened = yield* internalPushStore.make(postgres(), policy)
      expect(yield* Effect.promise(() => reopened.load(taskId, callerA))).toEqual([config])
    }))
})
