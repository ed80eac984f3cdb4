/**
 * A SQLite task store's retention with push on: the configs of the ended
 * tasks it deletes go with them.
 */
import { it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import { retentionTakesConfigs } from "./fixtures/pushRetention.js"

it.scopedLive(
  "a SQLite store's retention deletes the push configs of the ended tasks it deletes, in their caller's scope only",
  () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "a2a-push-retention-"))),
        (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
      )
      const filename = Path.join(dir, "tasks.db")
      yield* retentionTakesConfigs((retention) => A2AServer.TaskStoreConfig.Sqlite({ filename, retention }))
    }),
  30_000
)
