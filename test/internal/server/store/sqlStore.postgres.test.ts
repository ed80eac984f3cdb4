/**
 * The native PostgreSQL task store: the shared contract, and what it must
 * do beside today's store on the same database (see sqlStores.ts).
 */
import * as makeStore from "../../../../src/internal/server/store/makeStore.js"
import type * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { sqlStoreSuite } from "./sqlStores.js"
import { taskStoreContract } from "./taskStores.js"

/** PostgreSQL from the global setup, or DATABASE_URL; the tests fail without it. */
const postgres = (): internalTaskStore.DatabaseConfig => ({ _tag: "Postgres", url: databaseUrl(), poolSize: 2 })

taskStoreContract("PostgreSQL", () => makeStore.make(postgres()))
sqlStoreSuite("PostgreSQL", postgres)
