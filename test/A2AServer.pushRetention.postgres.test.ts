/**
 * A PostgreSQL task store's retention with push on, on the database of the
 * `test/globalSetup.postgres.ts` global setup or `DATABASE_URL`: the configs
 * of the ended tasks it deletes go with them.
 */
import { it } from "@effect/vitest"
import * as A2AServer from "../src/A2AServer.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import { retentionTakesConfigs } from "./fixtures/pushRetention.js"

it.scopedLive(
  "a PostgreSQL store's retention deletes the push configs of the ended tasks it deletes, in their caller's scope only",
  () =>
    retentionTakesConfigs((retention) =>
      A2AServer.TaskStoreConfig.Postgres({ url: databaseUrl(), poolSize: 2, retention })
    ),
  60_000
)
