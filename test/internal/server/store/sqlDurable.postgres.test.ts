/**
 * The durable runs of the native PostgreSQL task store (see sqlDurables.ts).
 */
import type * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { databaseUrl } from "../../../fixtures/databaseUrl.js"
import { sqlDurableSuite } from "./sqlDurables.js"

/** PostgreSQL from the global setup, or DATABASE_URL; the tests fail without it. */
const postgres = (): internalTaskStore.DatabaseConfig => ({ _tag: "Postgres", url: databaseUrl(), poolSize: 2 })

sqlDurableSuite("PostgreSQL", postgres)
